//! `random`: at every choice point a runnable task drawn uniformly, from a
//! ChaCha8 stream of its own for each (seed, iteration), so that any
//! iteration runs alone, on any thread or shard, as it runs in sequence.

use super::pick::{PickCtx, Strategy};
use crate::runq::RunQueue;
use crate::token::Schedule;
use crate::TaskId;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub(crate) struct Random(ChaCha8Rng);

impl Strategy for Random {
    const READS_LIST: bool = false;

    fn new_execution(schedule: &Schedule, _lenient: bool) -> Option<Self> {
        match schedule {
            Schedule::Random { seed, iteration } => Some(Random(rng_for(*seed, *iteration))),
            _ => None,
        }
    }

    /// Reads the runnable list alone: the context is never built.
    #[inline]
    fn next_task<'a>(&mut self, runnable: &RunQueue, _ctx: impl FnOnce() -> PickCtx<'a>) -> TaskId {
        runnable.select(index_below(&mut self.0, runnable.len()))
    }
}

/// The stream of iteration `iteration` of `seed`.
pub(crate) fn rng_for(seed: u64, iteration: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(iteration);
    rng
}

/// A uniform index below `n`: the very value `rng.random_range(0..n)`
/// draws (rand 0.9's single-sample method for ranges that fit 32 bits:
/// one widening multiply, and a second word only in the rare biased case),
/// written out because a step cannot afford the generic path. The test
/// `index_below_draws_what_random_range_draws` holds the two together.
#[inline]
pub(crate) fn index_below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    debug_assert!(n > 0 && n <= u32::MAX as usize);
    let range = n as u32;
    let wide = u64::from(rng.next_u32()) * u64::from(range);
    let (mut index, low) = ((wide >> 32) as u32, wide as u32);
    if low > range.wrapping_neg() {
        let carry = (u64::from(rng.next_u32()) * u64::from(range)) >> 32;
        index += low.checked_add(carry as u32).is_none() as u32;
    }
    index as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn index_below_draws_what_random_range_draws() {
        for seed in 0..64u64 {
            let (mut ours, mut theirs) = (rng_for(seed, seed / 3), rng_for(seed, seed / 3));
            for i in 0..2000usize {
                // Small ranges, as runnable sets are, and a few huge ones,
                // where the second word is drawn often.
                let n = if i % 97 == 0 {
                    u32::MAX as usize - i
                } else {
                    1 + i % 9
                };
                assert_eq!(index_below(&mut ours, n), theirs.random_range(0..n));
            }
        }
    }
}
