// MeshProgram over an injected collectives::World: a recording world whose communicators are the
// host algorithms over its own transport (delegating the rendezvous and byte moves to threads of
// this process) sees every collective the partitioned program makes and every byte it moves, and
// the program's gathered result still equals the reference evaluator's.
#include "src/exec/mesh_program.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "src/collectives/host_communicator.h"
#include "src/collectives/in_process_world.h"
#include "src/interp/evaluator.h"
#include "src/ir/parser.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

using collectives::Meeting;
using collectives::Request;

// One collective as one rank asked for it.
struct CollectiveCall {
  int rank = 0;
  std::string kind;
  std::vector<int> group;
  size_t input_bytes = 0;
  size_t output_bytes = 0;
};

// A World and Transport that records, then hands each meeting and byte move to an in-process
// world: only the transport is replaced, the algorithms are the library's.
class RecordingWorld : public collectives::World,
                       public collectives::Transport,
                       public std::enable_shared_from_this<RecordingWorld> {
 public:
  explicit RecordingWorld(std::shared_ptr<collectives::InProcessWorld> inner)
      : inner_(std::move(inner)) {}

  int size() const override { return inner_->size(); }
  std::vector<int> local_ranks() const override { return inner_->local_ranks(); }
  absl::StatusOr<std::unique_ptr<collectives::Communicator>> Connect(int rank) override {
    std::lock_guard<std::mutex> lock(mutex_);
    connected_.push_back(rank);
    return collectives::MakeHostCommunicator(shared_from_this(), rank);
  }
  void Abort(const absl::Status& status) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++aborts_;
    inner_->Abort(status);
  }
  void Reset() override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++resets_;
    inner_->Reset();
  }
  int world_size() const override { return inner_->world_size(); }

  absl::StatusOr<std::unique_ptr<Meeting>> Meet(const Request& request,
                                                const Check& check) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      calls_.push_back({request.rank, collectives::CollectiveKindName(request.kind),
                        request.members, request.input.size(), request.output.size()});
    }
    absl::StatusOr<std::unique_ptr<Meeting>> meeting = inner_->Meet(request, check);
    if (!meeting.ok()) return meeting.status();
    return std::unique_ptr<Meeting>(
        std::make_unique<RecordingMeeting>(*this, std::move(*meeting), request.rank));
  }

  std::vector<CollectiveCall> calls() {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }
  std::map<int, size_t> bytes_read() {
    std::lock_guard<std::mutex> lock(mutex_);
    return read_;
  }
  std::map<int, size_t> bytes_written() {
    std::lock_guard<std::mutex> lock(mutex_);
    return written_;
  }
  std::vector<int> connected() {
    std::lock_guard<std::mutex> lock(mutex_);
    return connected_;
  }
  int aborts() {
    std::lock_guard<std::mutex> lock(mutex_);
    return aborts_;
  }
  int resets() {
    std::lock_guard<std::mutex> lock(mutex_);
    return resets_;
  }

 private:
  // Counts the bytes each rank moves through the meeting.
  class RecordingMeeting : public Meeting {
   public:
    RecordingMeeting(RecordingWorld& world, std::unique_ptr<Meeting> inner, int rank)
        : world_(world), inner_(std::move(inner)), rank_(rank) {}
    void Read(int position, size_t offset, std::span<std::byte> into) override {
      world_.Count(rank_, into.size(), 0);
      inner_->Read(position, offset, into);
    }
    std::span<const std::byte> View(int position, size_t offset, size_t size,
                                    std::vector<std::byte>& scratch) override {
      world_.Count(rank_, size, 0);
      return inner_->View(position, offset, size, scratch);
    }
    void Write(int position, size_t offset, std::span<const std::byte> bytes) override {
      world_.Count(rank_, 0, bytes.size());
      inner_->Write(position, offset, bytes);
    }
    bool OutputIsRead() const override { return inner_->OutputIsRead(); }
    void Finish() override { inner_->Finish(); }

   private:
    RecordingWorld& world_;
    std::unique_ptr<Meeting> inner_;
    const int rank_;
  };

  void Count(int rank, size_t read, size_t written) {
    std::lock_guard<std::mutex> lock(mutex_);
    read_[rank] += read;
    written_[rank] += written;
  }

  std::shared_ptr<collectives::InProcessWorld> inner_;
  std::mutex mutex_;
  std::vector<CollectiveCall> calls_;
  std::map<int, size_t> read_, written_;
  std::vector<int> connected_;
  int aborts_ = 0;
  int resets_ = 0;
};

constexpr char kContractingSplitDot[] = R"(
HloModule contracting_split
ENTRY %main (x: f32[4,8], w: f32[8,6]) -> f32[4,6] {
  %x = f32[4,8]{1,0} parameter(0), sharding={devices=[1,2]0,1}
  %w = f32[8,6]{1,0} parameter(1), sharding={devices=[2,1]0,1}
  ROOT %dot = f32[4,6]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={replicated}
}
)";

ir::Literal Iota(const ir::Shape& shape, float scale) {
  ir::Literal literal(shape);
  for (int64_t i = 0; i < literal.ElementCount(); ++i) {
    literal.Set<float>(i, scale * static_cast<float>(i % 13) - 1.0f);
  }
  return literal;
}

class MeshProgramTest : public DeviceTest {
 protected:
  // Two devices, the dot above and its 2-device mesh.
  void SetUp() override {
    OpenDevices(2);
    absl::StatusOr<std::unique_ptr<ir::Module>> module =
        ir::ParseAndVerifyModule(kContractingSplitDot);
    ASSERT_TRUE(module.ok()) << module.status();
    module_ = std::move(*module);
    mesh_ = *spmd::Mesh::Create({2});
  }

  absl::StatusOr<std::unique_ptr<exec::MeshProgram>> Create(
      std::shared_ptr<collectives::World> world) {
    return exec::MeshProgram::Create(*module_, mesh_, {&device(0), &device(1)},
                                     {.world = std::move(world)});
  }

  std::unique_ptr<ir::Module> module_;
  spmd::Mesh mesh_;
};

TEST_F(MeshProgramTest, AnInjectedWorldCarriesTheContractingDotsOneAllReduce) {
  VKSPMD_ASSERT_OK_AND_ASSIGN(std::shared_ptr<collectives::InProcessWorld> inner,
                              collectives::InProcessWorld::Create(2));
  auto world = std::make_shared<RecordingWorld>(inner);
  VKSPMD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<exec::MeshProgram> program, Create(world));
  EXPECT_EQ(program->collective_count(), 1u);
  EXPECT_EQ(world->connected(), (std::vector<int>{0, 1}));

  std::vector<ir::Literal> arguments;
  arguments.push_back(Iota(module_->entry()->parameter(0)->shape(), 0.25f));
  arguments.push_back(Iota(module_->entry()->parameter(1)->shape(), 0.5f));
  std::vector<std::unique_ptr<exec::ShardedBuffer>> shards;
  for (size_t p = 0; p < arguments.size(); ++p) {
    VKSPMD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<exec::ShardedBuffer> shard,
                                program->Scatter(arguments[p], p));
    shards.push_back(std::move(shard));
  }
  EXPECT_TRUE(world->calls().empty()) << "scattering is no collective";
  VKSPMD_ASSERT_OK_AND_ASSIGN(std::vector<std::unique_ptr<exec::ShardedBuffer>> results,
                              program->Run({shards[0].get(), shards[1].get()}));
  VKSPMD_ASSERT_OK_AND_ASSIGN(ir::Literal got, program->Gather(results));

  // Each device holds a partial f32[4,6] sum: one all-reduce of 96 bytes over both ranks.
  const size_t bytes = 4 * 6 * sizeof(float);
  std::vector<CollectiveCall> calls = world->calls();
  ASSERT_EQ(calls.size(), 2u);
  std::set<int> ranks;
  for (const CollectiveCall& call : calls) {
    ranks.insert(call.rank);
    EXPECT_EQ(call.kind, "all-reduce");
    EXPECT_EQ(call.group, (std::vector<int>{0, 1}));
    EXPECT_EQ(call.input_bytes, bytes);
    EXPECT_EQ(call.output_bytes, bytes);
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1}));
  // Every input is read once and every output written once, half by each rank.
  EXPECT_EQ(world->bytes_read(), (std::map<int, size_t>{{0, bytes}, {1, bytes}}));
  EXPECT_EQ(world->bytes_written(), (std::map<int, size_t>{{0, bytes}, {1, bytes}}));
  EXPECT_EQ(world->aborts(), 0);
  EXPECT_EQ(world->resets(), 1) << "the executor resets its world after every run";

  VKSPMD_ASSERT_OK_AND_ASSIGN(ir::Literal expected, interp::Evaluate(*module_, arguments));
  ASSERT_EQ(got.shape(), expected.shape());
  for (int64_t i = 0; i < expected.ElementCount(); ++i) {
    EXPECT_NEAR(got.Get<float>(i), expected.Get<float>(i), 1e-4) << "element " << i;
  }
}

TEST_F(MeshProgramTest, AWorldOfTheWrongSizeIsRefused) {
  VKSPMD_ASSERT_OK_AND_ASSIGN(std::shared_ptr<collectives::InProcessWorld> three,
                              collectives::InProcessWorld::Create(3));
  absl::StatusOr<std::unique_ptr<exec::MeshProgram>> program = Create(three);
  EXPECT_EQ(program.status().code(), absl::StatusCode::kInvalidArgument) << program.status();
  EXPECT_NE(program.status().message().find("world has 3 rank(s)"), absl::string_view::npos)
      << program.status();
}

}  // namespace
}  // namespace vkspmd::testing
