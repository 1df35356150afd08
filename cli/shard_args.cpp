#include "commands.h"
#include "progress.h"

#include <cstdlib>

namespace ckpt::cli {

ops::ShardSpec shardSpec(const ShardArgs& a)
{
    ops::ShardSpec s;
    if (a.finalize) {
        s.finalize = true;
        s.count = a.shards; // names the missing shards even before any marker says N
    } else if (a.shard == "auto") {
        s = ops::shardFromEnvironment(a.shards, [](const char* name) { return std::getenv(name); });
    } else if (!a.shard.empty()) {
        if (a.shards) throw Error("--shards N goes with --shard auto; --shard I/N names N itself");
        s = ops::parseShard(a.shard);
    }
    s.waitSeconds = a.wait;
    s.rehash = a.rehash;
    setLogLabel(s.label());
    return s;
}

} // namespace ckpt::cli
