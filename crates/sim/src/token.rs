//! Schedule tokens: a short printable string that, with the scenario file,
//! names one execution exactly. Layout (before base64url): a version byte,
//! then varints and length-prefixed strings, then a 32-bit checksum.
//!
//! Version 3 adds a hash of the set-up's content, given by the caller, so
//! that a replay can tell an edited set-up from the one the token was
//! made for; version 4 makes it a 128-bit digest (the caller's: the
//! scenario crate takes the first half of a SHA-256) where version 3's
//! was a 32-bit FNV-1a,
//! which a second set-up can be made to match in a second. Tokens of
//! versions 2 and 3 still decode ([`Token::content`] `None` and
//! [`ContentHash::Fnv32`]) and encode back to their version.
//!
//! Besides the schedule and the limits, a token carries the caller's
//! context: strings the scheduler stores and returns without reading them
//! (which run of the caller's set-up the schedule belongs to).

use thiserror::Error;

use crate::limits::{self, Limit};

const MAGIC: &str = "nss1_";
/// Version 4: a 128-bit digest of the set-up's content follows the
/// name's hash.
const VERSION: u8 = 4;
/// Version 3: a 32-bit hash of the set-up's content follows the name's.
const VERSION_FNV_CONTENT: u8 = 3;
/// Version 2: the caller's context is one list of strings; no content hash.
const VERSION_NO_CONTENT: u8 = 2;

/// How the scheduler chose at every scheduling point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Schedule {
    /// Uniformly random; iteration `iteration` of seed `seed`.
    Random { seed: u64, iteration: u64 },
    /// Probabilistic concurrency testing with `depth` priority change points
    /// spread over `steps_hint` steps.
    Pct {
        seed: u64,
        iteration: u64,
        depth: u32,
        steps_hint: u64,
    },
    /// Discrete-event order: the task whose virtual clock is earliest runs.
    Fair,
    /// Explicit choices at every scheduling point with more than one runnable
    /// task (the task id chosen), then non-preemptive order. Used inside
    /// exhaustive search.
    Choices(Vec<u32>),
    /// Named segments: run each named task for its number of steps, starting
    /// at the named scheduling point, then non-preemptive order. Names make
    /// the schedule survive small code changes, and a mismatch is reported
    /// as a divergence at its step.
    Segments(Vec<Segment>),
}

/// One stretch of an explicit schedule: `task` runs `steps` steps in a row,
/// the first of them the scheduling point `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub task: String,
    pub at: String,
    pub steps: u64,
}

impl std::fmt::Display for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{} x{}", self.task, self.at, self.steps)
    }
}

/// Everything besides the scenario file that an execution depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// Hash of the scenario's name, to catch a token used with another file.
    pub scenario: u32,
    /// Hash of the set-up's content, as the caller computes it (`None` in
    /// a token of version 2, made before tokens carried one).
    pub content: Option<ContentHash>,
    /// What else the caller needs to rebuild the execution's set-up, in
    /// its own words; stored as given (one length byte per short string).
    pub context: Vec<String>,
    pub cpus: u32,
    pub max_steps: u64,
    pub max_virtual_ns: u64,
    pub schedule: Schedule,
}

#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum TokenError {
    #[error("a token starts with `{MAGIC}`")]
    Prefix,
    #[error("the token has a character that is not base64url at position {0}")]
    Alphabet(usize),
    #[error("the token is truncated or corrupted (checksum mismatch)")]
    Checksum,
    #[error(
        "the token was made by another token format (version {0}, this nssim reads {VERSION_NO_CONTENT} to {VERSION})"
    )]
    Version(u8),
    #[error("the token is truncated or corrupted ({0})")]
    Malformed(&'static str),
    /// A field outside the range the scenario format and the command line
    /// allow; the message is theirs.
    #[error("the token's {0}")]
    Range(String),
}

/// `v` checked against `limit`, as a decoded field.
fn in_range(limit: &Limit, v: u64) -> Result<u64, TokenError> {
    limit.check(v.into()).map_err(TokenError::Range)
}

/// The hash of a set-up's content that a token carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentHash {
    /// Version 4: a 128-bit digest of the content, which no one can make
    /// a second content match (the scenario crate's: the first half of a
    /// SHA-256).
    Digest(u128),
    /// Version 3: [`hash32`] of the content. Another content is easily
    /// made to match it, so a replay cannot trust it.
    Fnv32(u32),
}

/// A stable 32-bit hash used for scenario names and token checksums.
pub fn hash32(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in bytes {
        h ^= *b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn varint(&mut self) -> Result<u64, TokenError> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = *self
                .bytes
                .get(self.pos)
                .ok_or(TokenError::Malformed("ends inside a number"))?;
            self.pos += 1;
            // Only the shortest form is a token's: a last byte of zero
            // after others, or bits past 64, are not what `encode` writes.
            if (b == 0 && shift > 0) || (shift == 63 && b & 0x7e != 0) {
                return Err(TokenError::Malformed("number not in its shortest form"));
            }
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(TokenError::Malformed("number too long"))
    }

    fn u32(&mut self) -> Result<u32, TokenError> {
        u32::try_from(self.varint()?).map_err(|_| TokenError::Malformed("number out of range"))
    }

    /// Sixteen bytes, most significant first.
    fn u128(&mut self) -> Result<u128, TokenError> {
        let end = self.pos + 16;
        let bytes = self
            .bytes
            .get(self.pos..end)
            .ok_or(TokenError::Malformed("ends inside the content digest"))?;
        self.pos = end;
        Ok(u128::from_be_bytes(
            bytes.try_into().expect("sixteen bytes"),
        ))
    }

    fn string(&mut self) -> Result<String, TokenError> {
        let len = self.varint()? as usize;
        let end = self
            .pos
            .checked_add(len)
            .filter(|e| *e <= self.bytes.len())
            .ok_or(TokenError::Malformed("ends inside a name"))?;
        let s = std::str::from_utf8(&self.bytes[self.pos..end])
            .map_err(|_| TokenError::Malformed("a name is not UTF-8"))?;
        self.pos = end;
        Ok(s.to_string())
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn b64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 4 / 3 + 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.len();
        let v = (chunk[0] as u32) << 16
            | (*chunk.get(1).unwrap_or(&0) as u32) << 8
            | *chunk.get(2).unwrap_or(&0) as u32;
        for i in 0..=n {
            out.push(B64[((v >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

fn b64_decode(text: &str, offset: usize) -> Result<Vec<u8>, TokenError> {
    let mut vals = Vec::with_capacity(text.len());
    for (i, c) in text.bytes().enumerate() {
        let v = B64
            .iter()
            .position(|b| *b == c)
            .ok_or(TokenError::Alphabet(offset + i + 1))?;
        vals.push(v as u32);
    }
    if vals.len() % 4 == 1 {
        return Err(TokenError::Malformed("wrong length"));
    }
    let mut out = Vec::with_capacity(vals.len() * 3 / 4);
    for chunk in vals.chunks(4) {
        let mut v = 0u32;
        for (i, x) in chunk.iter().enumerate() {
            v |= x << (18 - 6 * i);
        }
        for i in 0..chunk.len() - 1 {
            out.push((v >> (16 - 8 * i)) as u8);
        }
    }
    Ok(out)
}

impl Token {
    pub fn encode(&self) -> String {
        let mut b = vec![match self.content {
            Some(ContentHash::Digest(_)) => VERSION,
            Some(ContentHash::Fnv32(_)) => VERSION_FNV_CONTENT,
            None => VERSION_NO_CONTENT,
        }];
        put_varint(&mut b, self.scenario as u64);
        match self.content {
            Some(ContentHash::Digest(d)) => b.extend_from_slice(&d.to_be_bytes()),
            Some(ContentHash::Fnv32(h)) => put_varint(&mut b, h as u64),
            None => {}
        }
        put_varint(&mut b, self.context.len() as u64);
        for c in &self.context {
            put_str(&mut b, c);
        }
        put_varint(&mut b, self.cpus as u64);
        put_varint(&mut b, self.max_steps);
        put_varint(&mut b, self.max_virtual_ns);
        match &self.schedule {
            Schedule::Random { seed, iteration } => {
                b.push(0);
                put_varint(&mut b, *seed);
                put_varint(&mut b, *iteration);
            }
            Schedule::Pct {
                seed,
                iteration,
                depth,
                steps_hint,
            } => {
                b.push(1);
                put_varint(&mut b, *seed);
                put_varint(&mut b, *iteration);
                put_varint(&mut b, *depth as u64);
                put_varint(&mut b, *steps_hint);
            }
            Schedule::Fair => b.push(2),
            Schedule::Choices(choices) => {
                b.push(3);
                put_runs(&mut b, choices);
            }
            Schedule::Segments(segments) => {
                b.push(4);
                put_segments(&mut b, segments);
            }
        }
        let sum = hash32(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        format!("{MAGIC}{}", b64_encode(&b))
    }

    pub fn decode(text: &str) -> Result<Token, TokenError> {
        let text = text.trim();
        let body = text.strip_prefix(MAGIC).ok_or(TokenError::Prefix)?;
        let bytes = b64_decode(body, MAGIC.len())?;
        if bytes.len() < 5 {
            return Err(TokenError::Malformed("too short"));
        }
        let (payload, sum) = bytes.split_at(bytes.len() - 4);
        let sum = u32::from_le_bytes([sum[0], sum[1], sum[2], sum[3]]);
        if hash32(payload) != sum {
            return Err(TokenError::Checksum);
        }
        let version = payload[0];
        if !(VERSION_NO_CONTENT..=VERSION).contains(&version) {
            return Err(TokenError::Version(version));
        }
        let mut r = Reader {
            bytes: payload,
            pos: 1,
        };
        let scenario = r.u32()?;
        let content = match version {
            VERSION => Some(ContentHash::Digest(r.u128()?)),
            VERSION_FNV_CONTENT => Some(ContentHash::Fnv32(r.u32()?)),
            _ => None,
        };
        let ncontext = r.varint()?;
        if ncontext > 1024 {
            return Err(TokenError::Malformed("too many context strings"));
        }
        let context = (0..ncontext)
            .map(|_| r.string())
            .collect::<Result<Vec<_>, _>>()?;
        // Checked before the schedule, whose size they bound.
        let cpus = in_range(&limits::CPUS, r.varint()?)? as u32;
        let max_steps = in_range(&limits::TOKEN_MAX_STEPS, r.varint()?)?;
        let max_virtual_ns = in_range(&limits::MAX_VIRTUAL_NS, r.varint()?)?;
        let tag = r.varint()?;
        let schedule = match tag {
            0 => Schedule::Random {
                seed: r.varint()?,
                iteration: r.varint()?,
            },
            1 => Schedule::Pct {
                seed: r.varint()?,
                iteration: r.varint()?,
                depth: in_range(&limits::PCT_DEPTH, r.varint()?)? as u32,
                steps_hint: r.varint()?,
            },
            2 => Schedule::Fair,
            3 => Schedule::Choices(get_runs(&mut r, max_steps.min(limits::MAX_CHOICES))?),
            4 => Schedule::Segments(get_segments(&mut r)?),
            _ => return Err(TokenError::Malformed("unknown schedule kind")),
        };
        if r.pos != payload.len() {
            return Err(TokenError::Malformed("trailing bytes"));
        }
        Ok(Token {
            scenario,
            content,
            context,
            cpus,
            max_steps,
            max_virtual_ns,
            schedule,
        })
    }
}

/// Segments with a string table: names and labels are stored once.
fn put_segments(b: &mut Vec<u8>, segments: &[Segment]) {
    // Names in order of first use; the index finds them without a scan (a
    // shrink cut short may leave 100 000 segments over 1 000 tasks).
    let mut table: Vec<&str> = Vec::new();
    let mut index: std::collections::BTreeMap<&str, u64> = Default::default();
    for seg in segments {
        for s in [seg.task.as_str(), seg.at.as_str()] {
            if !index.contains_key(s) {
                index.insert(s, table.len() as u64);
                table.push(s);
            }
        }
    }
    put_varint(b, table.len() as u64);
    for s in &table {
        put_str(b, s);
    }
    put_varint(b, segments.len() as u64);
    for seg in segments {
        put_varint(b, index[seg.task.as_str()]);
        put_varint(b, index[seg.at.as_str()]);
        put_varint(b, seg.steps);
    }
}

fn get_segments(r: &mut Reader<'_>) -> Result<Vec<Segment>, TokenError> {
    let n = r.varint()?;
    if n > 1 << 20 {
        return Err(TokenError::Malformed("name table too large"));
    }
    let table = (0..n).map(|_| r.string()).collect::<Result<Vec<_>, _>>()?;
    let count = r.varint()?;
    if count > 1 << 24 {
        return Err(TokenError::Malformed("too many segments"));
    }
    let name = |i: u64| {
        table
            .get(i as usize)
            .cloned()
            .ok_or(TokenError::Malformed("a name index is out of range"))
    };
    let mut out = Vec::new();
    // Readers add up the steps to find a step's segment: keep that sum
    // within a u64.
    let mut total: u64 = 0;
    for _ in 0..count {
        let task = name(r.varint()?)?;
        let at = name(r.varint()?)?;
        let steps = r.varint()?;
        total = total
            .checked_add(steps)
            .ok_or(TokenError::Malformed("too many steps in the segments"))?;
        out.push(Segment { task, at, steps });
    }
    Ok(out)
}

/// Choices as (task, run length) pairs.
fn put_runs(b: &mut Vec<u8>, choices: &[u32]) {
    let mut runs: Vec<(u32, u64)> = Vec::new();
    for c in choices {
        match runs.last_mut() {
            Some((t, n)) if t == c => *n += 1,
            _ => runs.push((*c, 1)),
        }
    }
    put_varint(b, runs.len() as u64);
    for (t, n) in runs {
        put_varint(b, t as u64);
        put_varint(b, n);
    }
}

/// At most `max` choices: an execution chooses at most once a step, and
/// the run lengths are checked before any of them is expanded.
fn get_runs(r: &mut Reader<'_>, max: u64) -> Result<Vec<u32>, TokenError> {
    let nruns = r.varint()?;
    let mut out = Vec::new();
    for _ in 0..nruns {
        let t = r.u32()?;
        let n = r.varint()?;
        if (out.len() as u64)
            .checked_add(n)
            .is_none_or(|total| total > max)
        {
            return Err(TokenError::Range(format!(
                "explicit choices must be at most {} (its max_steps, and no more than {})",
                limits::group(max.into()),
                limits::group(limits::MAX_CHOICES.into())
            )));
        }
        out.extend(std::iter::repeat_n(t, n as usize));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(schedule: Schedule) -> Token {
        Token {
            scenario: hash32(b"ipc-alloc-vs-free"),
            content: Some(ContentHash::Digest(
                0x0123_4567_89ab_cdef_fedc_ba98_7654_3210,
            )),
            context: vec!["v6.2".into(), "+ipc-batch-free".into()],
            cpus: 2,
            max_steps: 1_000_000,
            max_virtual_ns: 3_600_000_000_000,
            schedule,
        }
    }

    #[test]
    fn every_schedule_round_trips() {
        for s in [
            Schedule::Random {
                seed: 7,
                iteration: 12345,
            },
            Schedule::Pct {
                seed: u64::MAX,
                iteration: 0,
                depth: 3,
                steps_hint: 999,
            },
            Schedule::Fair,
            Schedule::Choices(vec![0, 0, 0, 1, 2, 2, 0]),
            Schedule::Choices(vec![]),
            Schedule::Segments(vec![
                Segment {
                    task: "looper".into(),
                    at: "unshare".into(),
                    steps: 15,
                },
                Segment {
                    task: "kworker".into(),
                    at: "work_run".into(),
                    steps: 3,
                },
                Segment {
                    task: "looper".into(),
                    at: "atomic_read".into(),
                    steps: 1,
                },
            ]),
        ] {
            let t = sample(s);
            let text = t.encode();
            assert!(text.starts_with(MAGIC));
            assert_eq!(Token::decode(&text), Ok(t));
        }
    }

    #[test]
    fn a_digest_cut_short_is_refused() {
        let mut b = vec![VERSION];
        put_varint(&mut b, hash32(b"x").into());
        b.extend_from_slice(&[0xab; 15]);
        let sum = hash32(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        let text = format!("{MAGIC}{}", b64_encode(&b));
        assert_eq!(
            Token::decode(&text),
            Err(TokenError::Malformed("ends inside the content digest"))
        );
    }

    #[test]
    fn corruption_is_detected() {
        let text = sample(Schedule::Fair).encode();
        let truncated = &text[..text.len() - 3];
        assert!(Token::decode(truncated).is_err());
        let mut flipped: Vec<u8> = text.clone().into_bytes();
        let i = MAGIC.len() + 4;
        flipped[i] = if flipped[i] == b'A' { b'B' } else { b'A' };
        assert_eq!(
            Token::decode(std::str::from_utf8(&flipped).unwrap()),
            Err(TokenError::Checksum)
        );
        assert_eq!(Token::decode("hello"), Err(TokenError::Prefix));
        // A token of version 2, without a content hash, still decodes and
        // encodes back to itself.
        let v2 = "nss1_Aoic0twJAQR2Ni4yAoCt4gSAwOKF42gEAgZsb29wZXIFc3RhcnQBAAE76VoR8w";
        let t = Token::decode(v2).unwrap();
        assert_eq!(t.content, None);
        assert_eq!(t.context, ["v6.2"]);
        assert_eq!(t.encode(), v2);
        // One of version 3, whose content hash is 32 bits, likewise.
        let v3 = Token {
            content: Some(ContentHash::Fnv32(hash32(b"the scenario's content"))),
            ..sample(Schedule::Fair)
        };
        let text = v3.encode();
        assert_eq!(Token::decode(&text), Ok(v3));
        assert_eq!(text.as_bytes()[MAGIC.len()], b'A', "version byte 3");
        // A token of version 1, whose context was a label and a list.
        let v1 = "nss1_AYic0twJBHY2LjIAAoCt4gSAwOKF42gEAgZsb29wZXIFc3RhcnQBAAE7az-lQA";
        assert_eq!(Token::decode(v1), Err(TokenError::Version(1)));
        assert_eq!(Token::decode("nss1_ab!c"), Err(TokenError::Alphabet(8)));
    }

    /// A token with a valid checksum whose payload ends with `schedule`
    /// (tag and fields), for fields `encode` cannot write.
    fn raw(cpus: u64, max_steps: u64, schedule: &[u64]) -> String {
        let mut b = vec![VERSION_FNV_CONTENT];
        for v in [hash32(b"x"), 7, 1, 0].map(u64::from) {
            put_varint(&mut b, v);
        }
        for v in [cpus, max_steps, 1].iter().chain(schedule) {
            put_varint(&mut b, *v);
        }
        let sum = hash32(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        format!("{MAGIC}{}", b64_encode(&b))
    }

    #[test]
    fn a_number_not_in_its_shortest_form_is_refused() {
        let well_formed = raw(1, 100, &[2]);
        assert!(Token::decode(&well_formed).is_ok());
        // cpus = 1 written as 0x81 0x00, and the steps as 11 bytes.
        let mut b = vec![VERSION_FNV_CONTENT];
        for v in [hash32(b"x"), 7, 1, 0].map(u64::from) {
            put_varint(&mut b, v);
        }
        b.extend_from_slice(&[0x81, 0x00]);
        for v in [100u64, 1, 2] {
            put_varint(&mut b, v);
        }
        let sum = hash32(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        let overlong = format!("{MAGIC}{}", b64_encode(&b));
        assert_eq!(
            Token::decode(&overlong),
            Err(TokenError::Malformed("number not in its shortest form"))
        );
        let mut r = Reader {
            bytes: &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
            pos: 0,
        };
        assert!(r.varint().is_err(), "a 65th bit");
    }

    fn range_error(text: &str) -> String {
        match Token::decode(text) {
            Err(TokenError::Range(m)) => m,
            other => panic!("not a range error: {other:?}"),
        }
    }

    #[test]
    fn out_of_range_fields_are_refused_with_the_shared_message() {
        for cpus in [0, 1025] {
            let t = Token {
                cpus,
                ..sample(Schedule::Fair)
            };
            assert_eq!(range_error(&t.encode()), limits::CPUS.message(cpus.into()));
        }
        let t = sample(Schedule::Pct {
            seed: 1,
            iteration: 0,
            depth: 65,
            steps_hint: 1,
        });
        assert_eq!(range_error(&t.encode()), limits::PCT_DEPTH.message(65));
        assert!(Token::decode(&t.encode())
            .unwrap_err()
            .to_string()
            .contains("`pct_depth` must be in 1..=64, not 65"));
    }

    #[test]
    fn boundaries_of_the_token_fields() {
        type Set = fn(&mut Token, u64);
        let cases: [(&Limit, Set); 4] = [
            (&limits::CPUS, |t, v| t.cpus = v as u32),
            (&limits::TOKEN_MAX_STEPS, |t, v| t.max_steps = v),
            (&limits::MAX_VIRTUAL_NS, |t, v| t.max_virtual_ns = v),
            (&limits::PCT_DEPTH, |t, v| {
                t.schedule = Schedule::Pct {
                    seed: 0,
                    iteration: 0,
                    depth: v as u32,
                    steps_hint: 1,
                }
            }),
        ];
        for (limit, set) in cases {
            let below = limit.min.checked_sub(1);
            let above = limit.max.checked_add(1);
            for (v, ok) in [(below, false), (Some(limit.min), true)]
                .into_iter()
                .chain([(Some(limit.max), true), (above, false)])
            {
                let Some(v) = v else { continue };
                let mut t = sample(Schedule::Fair);
                set(&mut t, v);
                let decoded = Token::decode(&t.encode());
                if ok {
                    assert_eq!(decoded, Ok(t), "{} = {v}", limit.name);
                } else {
                    assert_eq!(
                        decoded,
                        Err(TokenError::Range(limit.message(v.into()))),
                        "{} = {v}",
                        limit.name
                    );
                }
            }
        }
    }

    #[test]
    fn explicit_choices_are_bounded_before_they_are_expanded() {
        // One run of 2^28 choices: a few bytes asking for a gigabyte.
        let text = raw(2, 1_000_000_000_000, &[3, 1, 0, 1 << 28]);
        assert!(text.len() < 64);
        assert!(range_error(&text).contains("explicit choices must be at most"));
        // And never more than max_steps.
        assert!(Token::decode(&raw(2, 10, &[3, 1, 0, 11])).is_err());
        assert!(Token::decode(&raw(2, 10, &[3, 1, 0, 10])).is_ok());
        // Run lengths whose sum overflows.
        assert!(Token::decode(&raw(2, 10, &[3, 2, 0, 5, 1, u64::MAX])).is_err());
    }

    #[test]
    fn segment_steps_cannot_overflow() {
        let seg = |steps| Segment {
            task: "a".into(),
            at: "b".into(),
            steps,
        };
        let one = sample(Schedule::Segments(vec![seg(u64::MAX)]));
        assert_eq!(Token::decode(&one.encode()), Ok(one));
        let two = sample(Schedule::Segments(vec![seg(u64::MAX), seg(1)]));
        assert_eq!(
            Token::decode(&two.encode()),
            Err(TokenError::Malformed("too many steps in the segments"))
        );
    }
}
