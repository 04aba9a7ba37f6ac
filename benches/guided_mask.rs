//! Cost of guided decoding in the simulator's grammar module: building the token trie, compiling a
//! typical JSON schema (the extra time-to-first-token of a new schema), and the per-token cost of
//! mask + seeded choice + consume for each guide type, on a synthetic 128k-token byte-level
//! vocabulary (the size of Llama 3's) and on a 32k one. Each guide runs 8 sequences twice: with the
//! grammar cache off (every sequence compiles and warms its own lexer) and on (the first compiles,
//! the other 7 copy it and share its lexer states).
//!
//! `cargo bench --bench guided_mask`

#[cfg(not(trtllm_real))]
mod bench {
    use std::time::{Duration, Instant};

    use trtllm::guided::{GRAMMAR_CACHE_CAPACITY, GrammarMatcherFactory, GuideType};

    const SCHEMA: &str = r#"{"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 24},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "email": {"type": "string", "pattern": "^[a-z]{1,10}@[a-z]{1,10}\\.com$"},
        "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 4},
        "address": {"type": "object", "properties": {"street": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}}, "required": ["street", "zip"]}
    }, "required": ["name", "age", "email", "address"]}"#;

    const GBNF: &str = "root ::= expr\nexpr ::= term ((\"+\" | \"-\") term)*\nterm ::= factor ((\"*\" | \"/\") factor)*\nfactor ::= [0-9]+ | \"(\" expr \")\"\n";

    const STRUCTURAL_TAG: &str = r#"{"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<function="],
      "tags": [{"begin": "<function=get_weather>", "content": {"type": "json_schema", "json_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}, "end": "</function>"}],
      "at_least_one": true}}"#;

    /// A synthetic byte-level vocabulary: id 0 is the stop token, then the 256 single bytes, then
    /// distinct multi-byte pieces (letters, digits, punctuation, `Ġ`-prefixed words) up to `size`.
    fn vocabulary(size: usize) -> Vec<String> {
        let alphabet: Vec<char> = (b'!'..=b'~').map(char::from).chain("ĠĊ".chars()).collect();
        let mut vocab = vec!["<|endoftext|>".to_string()];
        let mut seen = std::collections::HashSet::new();
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for c in alphabet.iter() {
            vocab.push(c.to_string());
            seen.insert(c.to_string());
        }
        while vocab.len() < size {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = 2 + (state % 7) as usize;
            let mut word = String::new();
            let mut s = state;
            if s.is_multiple_of(3) {
                word.push('Ġ');
            }
            for _ in 0..len {
                s = s.rotate_left(9) ^ 0x9E37_79B9;
                let letters = if s.is_multiple_of(5) { alphabet.len() } else { 26 };
                let base = if letters == 26 { (b'a' - b'!') as usize } else { 0 };
                word.push(alphabet[base + (s as usize / 7) % letters]);
            }
            if seen.insert(word.clone()) {
                vocab.push(word);
            }
        }
        vocab
    }

    /// Mean time to a matcher for the first sequence and for the 7 repeats, mean time per token, and
    /// mean sequence length, over 8 seeded sequences of one guide.
    fn per_token(
        factory: &GrammarMatcherFactory,
        guide_type: GuideType,
        guide: Option<&str>,
    ) -> (Duration, Duration, Duration, u32) {
        let mut total = Duration::ZERO;
        let mut tokens = 0u32;
        let (mut first, mut repeats) = (Duration::ZERO, Duration::ZERO);
        for seed in 0..8u64 {
            let started = Instant::now();
            let mut matcher = factory.matcher(guide_type, guide).expect("guide compiles");
            if seed == 0 {
                first = started.elapsed();
            } else {
                repeats += started.elapsed();
            }
            let started = Instant::now();
            while !matcher.is_finished() && matcher.steps() < 256 {
                let token = matcher.choose_token(seed).expect("token");
                matcher.consume(token).expect("consume");
            }
            total += started.elapsed();
            tokens += matcher.steps();
        }
        (first, repeats / 7, total / tokens.max(1), tokens / 8)
    }

    pub fn main() {
        println!("build profile: {}", env!("TRTLLM_BUILD_PROFILE"));
        for size in [32_000, 128_000] {
            let vocab = vocabulary(size);
            let started = Instant::now();
            let factory = GrammarMatcherFactory::new(&vocab, None, &[0]).expect("factory");
            println!("vocabulary {size}: token trie + factory {:?}", started.elapsed());
            let cases: [(&str, GuideType, Option<&str>); 5] = [
                ("JSON", GuideType::Json, None),
                ("JSON_SCHEMA", GuideType::JsonSchema, Some(SCHEMA)),
                ("REGEX", GuideType::Regex, Some(r"[a-z]{3,12}@[a-z]{3,8}\.(com|org) [0-9]{3}-[0-9]{4}")),
                ("EBNF_GRAMMAR", GuideType::EbnfGrammar, Some(GBNF)),
                ("STRUCTURAL_TAG", GuideType::StructuralTag, Some(STRUCTURAL_TAG)),
            ];
            for (name, guide_type, guide) in cases {
                for (cache, capacity) in [("off", 0), ("on ", GRAMMAR_CACHE_CAPACITY)] {
                    let factory = factory.clone().with_grammar_cache(capacity);
                    let (first, repeat, token, mean_len) = per_token(&factory, guide_type, guide);
                    println!(
                        "  {name:<15} cache {cache}: matcher first {first:>10.2?}, repeat {repeat:>10.2?}   \
                         mask+choice+consume {token:>9.2?}/token   (mean {mean_len} tokens)"
                    );
                }
            }
        }
    }
}

#[cfg(not(trtllm_real))]
fn main() {
    bench::main();
}

/// The grammar module belongs to the simulator; a TensorRT-LLM build has nothing to measure.
#[cfg(trtllm_real)]
fn main() {
    println!("guided_mask: the simulator's grammar module is not built against TensorRT-LLM");
}
