//! Tokens from outside: whatever the string, decoding gives a token or an
//! error, never a panic; and every token survives encoding.

use proptest::prelude::*;
use sim::limits;
use sim::{ContentHash, Schedule, Segment, Token, TokenError};

fn schedule() -> impl Strategy<Value = Schedule> {
    prop_oneof![
        (any::<u64>(), any::<u64>())
            .prop_map(|(seed, iteration)| Schedule::Random { seed, iteration }),
        (any::<u64>(), any::<u64>(), 1u32..64, any::<u64>()).prop_map(
            |(seed, iteration, depth, steps_hint)| {
                Schedule::Pct {
                    seed,
                    iteration,
                    depth,
                    steps_hint,
                }
            }
        ),
        Just(Schedule::Fair),
        proptest::collection::vec(0u32..8, 0..50).prop_map(Schedule::Choices),
        proptest::collection::vec(("[a-z.0-9]{1,8}", "[a-z_ :]{1,12}", 1u64..1000), 0..20)
            .prop_map(|v| {
                Schedule::Segments(
                    v.into_iter()
                        .map(|(task, at, steps)| Segment { task, at, steps })
                        .collect(),
                )
            }),
    ]
}

/// A content hash of each token version that has one.
fn content() -> impl Strategy<Value = ContentHash> {
    prop_oneof![
        any::<u128>().prop_map(ContentHash::Digest),
        any::<u32>().prop_map(ContentHash::Fnv32),
    ]
}

fn token() -> impl Strategy<Value = Token> {
    (
        (any::<u32>(), proptest::option::of(content())),
        proptest::collection::vec("[a-z0-9.+-]{0,12}", 0..4),
        // In the ranges of `sim::limits`; max_steps bounds the choices.
        limits::CPUS.min as u32..=limits::CPUS.max as u32,
        50..=limits::TOKEN_MAX_STEPS.max,
        limits::MAX_VIRTUAL_NS.min..=limits::MAX_VIRTUAL_NS.max,
        schedule(),
    )
        .prop_map(
            |((scenario, content), context, cpus, max_steps, max_virtual_ns, schedule)| Token {
                scenario,
                content,
                context,
                cpus,
                max_steps,
                max_virtual_ns,
                schedule,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn any_string_decodes_or_errs(s in ".{0,200}") {
        let _ = Token::decode(&s);
        let _ = Token::decode(&format!("nss1_{s}"));
    }

    #[test]
    fn any_token_round_trips(t in token()) {
        prop_assert_eq!(Token::decode(&t.encode()), Ok(t));
    }

    #[test]
    fn cpus_out_of_range_are_refused(t in token(), cpus in prop_oneof![Just(0u32), 1025u32..]) {
        let t = Token { cpus, ..t };
        prop_assert_eq!(
            Token::decode(&t.encode()),
            Err(TokenError::Range(limits::CPUS.message(cpus.into())))
        );
    }

    #[test]
    fn a_damaged_token_is_an_error(t in token(), at in any::<usize>(), c in "[A-Za-z0-9_-]") {
        let mut text = t.encode().into_bytes();
        let i = 5 + at % (text.len() - 5);
        text[i] = c.as_bytes()[0];
        let text = String::from_utf8(text).unwrap();
        // One changed character breaks the checksum, unless it changed
        // nothing.
        if let Ok(other) = Token::decode(&text) {
            prop_assert_eq!(other, t);
        }
        let truncated = &text[..text.len() / 2];
        let _ = Token::decode(truncated);
    }
}
