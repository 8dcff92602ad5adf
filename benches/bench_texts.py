"""What the Python sides of the benches share: the texts file the Rust side
writes (one text per line) and the tokenizer as its users set it up."""
import numpy as np
from tokenizers import Tokenizer


def read_texts(path):
    """The texts of `path`, one per line (a trailing newline adds none)."""
    with open(path, encoding="utf-8") as f:
        texts = f.read().split("\n")
    if texts and texts[-1] == "":
        texts.pop()
    return texts


def padded_tokenizer(path, max_len):
    """`tokenizer.json` at `path`, truncating at `max_len` and padding each batch to its longest text."""
    tok = Tokenizer.from_file(path)
    tok.enable_truncation(max_len)
    tok.enable_padding(pad_id=0, pad_type_id=0, pad_token="[PAD]")
    return tok


def encode(tok, texts, dtype):
    """`texts` as one padded batch: (ids, attention mask, token type ids), numpy arrays of `dtype`."""
    enc = tok.encode_batch(texts)
    ids = np.array([e.ids for e in enc], dtype=dtype)
    mask = np.array([e.attention_mask for e in enc], dtype=dtype)
    types = np.array([e.type_ids for e in enc], dtype=dtype)
    return ids, mask, types
