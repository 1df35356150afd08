// One export or Universal conversion split across processes and nodes (`--shard I/N`, then
// `--finalize`). Every process computes the same plan from the checkpoint's metadata alone: the
// work as units (an export's output shards, a conversion's parameter folders) with their sizes,
// dealt out to N shards balanced by bytes. No data passes between processes: they meet only in
// the shared output folder, where each unit's files are renamed in whole and a marker per unit
// records them (name, size, modification time, xxh3) and the plan's fingerprint. A shard run
// again after a crash or a kill does only its units without a valid marker. `--finalize` checks
// every unit's marker and its files (sizes and times; `--rehash` reads them back), then writes the files that
// bind the units into one output (an index, latest_universal, ...) and removes the markers: the folder then
// equals a one-process run's, byte for byte. Processes started together by a launcher (srun, mpirun,
// torchrun) need no second command: rank 0 waits for the others' markers and finalizes.
#pragma once

#include "io/output.h"
#include "ops/job.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ckpt::ops {

struct ShardSpec
{
    int index = 0, count = 0; // count 0: one process does everything, as before
    bool finalize = false;    // `--finalize`: check and bind, write no unit
    // Rank 0 of processes a launcher started together: after its units, it waits for the
    // others' shard markers (at most waitSeconds) and finalizes.
    bool finalizeWhenAllDone = false;
    double waitSeconds = 3600;
    // Finalize reads every file back and compares its hash with the marker's (else sizes and
    // modification times are compared: a stat per file).
    bool rehash = false;
    std::string source; // where index/count came from: "--shard", "Slurm (SLURM_PROCID)", ...
    std::string job;    // the launcher's job/step id ("" without one): markers say which launch wrote them

    bool sharded() const { return count > 0 || finalize; }
    std::string label() const; // "shard 2/4", "finalize"
};

// `--shard I/N` (0 <= I < N): throws Error saying what is wrong with the text.
ShardSpec parseShard(const std::string& text);
// `--shard auto`: index and count from the launcher's environment, in this order: Open MPI
// (OMPI_COMM_WORLD_RANK/SIZE), PMI (PMI_RANK/SIZE: MPICH, Intel MPI, srun --mpi=pmi2), a Slurm
// job array (SLURM_ARRAY_TASK_ID less SLURM_ARRAY_TASK_MIN; N from `shards` or
// SLURM_ARRAY_TASK_COUNT), srun (SLURM_PROCID/SLURM_NTASKS), torchrun (RANK/WORLD_SIZE). All but a
// job array started every rank together: rank 0 finalizes. `shards` > 0 is `--shards N`, which
// must agree with a launcher's count. `env` reads a variable (getenv; tests give their own).
ShardSpec shardFromEnvironment(int shards, const std::function<const char*(const char*)>& env);

// Deals units (their sizes in bytes) out to `count` shards: the largest first, each to the
// shard with the fewest bytes so far (the lowest index on a tie). The same in every process.
std::vector<int> dealUnits(const std::vector<uint64_t>& bytes, int count);

// One unit of work: the files it writes (relative to the output folder) and their bytes.
struct WorkUnit
{
    std::vector<std::string> files;
    uint64_t bytes = 0;
};

// The markers of one split job in its output folder (".ckpt-shards/" inside it).
class ShardedOutput
{
public:
    // `fingerprint`: a hash of everything the plan depends on (input files, options, every
    // unit's content); a marker of another plan is not this job's. `bindingFiles`: what
    // finalize writes. A folder holding any other file is refused (two outputs would mix).
    ShardedOutput(std::vector<std::string> inputs, std::string folder, const ShardSpec& spec,
                  uint64_t fingerprint, std::vector<WorkUnit> units, std::vector<std::string> bindingFiles);

    const std::vector<WorkUnit>& units() const { return m_units; }
    // This shard's units (all of them for a one-process run).
    const std::vector<size_t>& mine() const { return m_mine; }
    bool done(size_t unit) const; // a valid marker, its files present with their sizes
    uint64_t bytesOf(const std::vector<size_t>& units) const;

    // A shared transaction on the output folder: unit files, or finalize's binding files.
    std::unique_ptr<io::OutputTransaction> transaction() const;
    // After `tx` holds the unit's files, written and verified: its marker joins the
    // transaction, last, and everything is renamed in.
    void commitUnit(size_t unit, io::OutputTransaction& tx) const;
    // This process's part of the split run, the one driver every sharded operation uses: each of
    // its units that an earlier run has not written (`kept` is told of those) is written by
    // `writeUnit` into `transaction()` (asked once, first), verified, then committed with its
    // marker; the shard's own marker then says it finished, or how it failed (and the error is
    // rethrown).
    void writeMine(const std::function<io::OutputTransaction&()>& transaction,
                   const std::function<void(size_t unit, io::OutputTransaction& tx)>& writeUnit,
                   const std::function<void(size_t unit)>& kept = {}) const;

    // Rank 0 of a launched group: returns when every other shard's marker is there; throws if
    // one failed, on timeout, or when cancelled.
    void waitForOtherShards(const ProgressSink& progress, const CancelToken& cancel) const;
    // Finalize's check: every unit's marker is this plan's, and its files have the sizes and
    // modification times recorded (and hashes, with ShardSpec::rehash). Throws Error naming the shards not
    // done (counted as `count` when given, else as the markers' own count), and nothing is written. Returns
    // the units' files (paths in the folder, in unit order) and their bytes.
    struct Written
    {
        std::vector<std::string> files;
        uint64_t bytes = 0;
    };
    Written checkComplete(const ProgressSink& progress, const CancelToken& cancel) const;
    // After the binding files are in: the markers go (the folder as one process leaves it).
    void removeMarkers() const;

private:
    // All of this shard's units are done (or it failed: `error` says how).
    void markShard(const std::string& error = {}) const;
    std::string markerDir() const;
    std::string unitMarker(size_t unit) const;
    std::string shardMarker(int index, int count) const;
    void refuseForeignFiles() const;
    int shardCountForMessages() const;

    std::vector<std::string> m_inputs;
    std::string m_folder;
    ShardSpec m_spec;
    uint64_t m_fingerprint;
    std::vector<WorkUnit> m_units;
    std::vector<std::string> m_binding;
    std::vector<size_t> m_mine;
};

// A plan's fingerprint: xxh3 of its description (ShardedOutput's constructor takes it).
uint64_t fingerprintOf(const std::string& planText);
// The input files as a plan describes them: each file's name with its size and modification time (a
// checkpoint replaced between two shards' runs is another plan). URLs: the path only.
std::string describeInputs(const std::vector<std::string>& files);

// xxh3-64 of a whole file, read in blocks (cancellable).
uint64_t hashFile(const std::string& path, const CancelToken& cancel);

} // namespace ckpt::ops
