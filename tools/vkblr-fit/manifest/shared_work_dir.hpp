// shared_work_dir.hpp — the one work directory of a manifest run spread
// over the ranks of an MPI job (run_manifest.hpp): every rank writes its
// layers' files into it and rank 0 reads them all, so it must be one
// directory every rank sees (ranks on one host, or a file system they
// share) and can write.
#pragma once

#include <functional>
#include <string>

#include "vkblr-fit/fit_ranks.hpp"

namespace vkblr::fit {

// Collective. Rank 0 runs `prepare` (which checks the outputs and makes
// the work directory `work_dir`), then writes into it a token file named
// after a value unique to this run (".ranks-VALUE", holding VALUE); every
// rank then checks that it reads VALUE there and can create a file there;
// then rank 0 removes the token. Throws vkblr::Error on every rank: rank
// 0's error when `prepare` failed; else, when any rank does not find the
// token, reads another value or cannot write there, one naming each such
// rank, its host and what it found, and what to do (--out `out` on a file
// system every rank shares). With one rank: `prepare` alone.
void prepare_shared_work_dir(FitRanks& ranks, const std::string& work_dir, const std::string& out,
                             const std::function<void()>& prepare);

}  // namespace vkblr::fit
