//! Bench texts shared by the trt-nlp benchmarks (included with `#[path]`):
//! a seeded generator of sentence-like texts, the same on every machine.
#![allow(dead_code)] // each bench uses part of this

/// The generator's seed: fixed, so every run and both languages see the same texts.
pub const SEED: u64 = 0x5EED_2024;

/// xorshift64*: deterministic across platforms, no dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Sentence-like texts of 5-60 whole words from the vocabulary, with some
/// capitals and punctuation.
pub fn generate_texts(tokenizer: &tokenizers::Tokenizer, n: usize) -> Vec<String> {
    generate_texts_of(tokenizer, n, 5, 60)
}

/// [`generate_texts`] of `min..=max` words each.
pub fn generate_texts_of(tokenizer: &tokenizers::Tokenizer, n: usize, min: usize, max: usize) -> Vec<String> {
    let mut words: Vec<String> =
        tokenizer.get_vocab(false).into_keys().filter(|w| w.len() >= 2 && w.chars().all(|c| c.is_ascii_alphabetic())).collect();
    words.sort_unstable(); // HashMap order is random; the texts must not be
    let mut rng = Rng(SEED);
    (0..n)
        .map(|_| {
            let count = min + rng.below(max.saturating_sub(min) + 1);
            let mut text = String::new();
            for i in 0..count {
                let word = &words[rng.below(words.len())];
                if i == 0 {
                    text.push_str(&word[..1].to_ascii_uppercase());
                    text.push_str(&word[1..]);
                } else {
                    text.push(' ');
                    text.push_str(word);
                }
                if i + 1 < count && rng.below(12) == 0 {
                    text.push(',');
                }
            }
            text.push(if rng.below(5) == 0 { '?' } else { '.' });
            text
        })
        .collect()
}

/// `texts` in a temporary file, one per line, for the Python side of a bench.
pub fn write_temp(texts: &[String]) -> tempfile::NamedTempFile {
    use std::io::Write;
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    for t in texts {
        writeln!(file, "{t}").expect("texts written");
    }
    file.flush().expect("texts written");
    file
}
