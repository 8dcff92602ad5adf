#!/usr/bin/env python3
"""Make small HuggingFace model folders and the reference outputs the real
libraries compute from them, for the Rust HuggingFace-folder importer's tests.

Every model folder under --out is written by the libraries themselves
(transformers `save_pretrained`, sentence-transformers `SentenceTransformer.save`
/ `CrossEncoder.save`), from tiny random-weight models (hidden size 32, 2 layers,
4 heads) and tokenizers trained here, with the `tokenizers` library, on a few
built-in English paragraphs (vocabularies of a few hundred tokens), then wrapped
in each family's own tokenizer class so that `tokenizer.json` and
`tokenizer_config.json` are exactly what that class writes. The folders stay
small enough to commit (a few hundred KB each).

The references (`references/<name>.json`) are what transformers /
sentence-transformers / torch output when they load those folders back:
token ids as the library fed them (after its truncation), sentence embeddings
from `SentenceTransformer.encode`, logits from the model's forward pass, scores
from `pipeline("text-classification", top_k=None)` and `CrossEncoder.predict`.
Nothing is computed by hand. The weights are drawn with a large spread (std 0.2,
random LayerNorm gains and biases, random biases everywhere) so that texts give
clearly different outputs and a wrong implementation cannot match by accident.

Also written:
  references/mpnet_buckets.json     MPNet's relative-position bucket table (128 positions)
                                    from transformers' MPNetEncoder.relative_position_bucket
  references/all-minilm-l6-v2.json  SentenceTransformer(<real all-MiniLM-L6-v2 folder>).encode
                                    on texts that include some longer than 256 word pieces
                                    (only when --minilm points at the real folder; its weights
                                    are not copied)

Folder `bert-hub` is rewritten after saving into the old hub layout (modules.json
types `sentence_transformers.models.*`, `pooling_mode_*` flags in 1_Pooling,
`max_seq_length` in sentence_bert_config.json, no 2_Normalize folder) as real hub
models such as all-MiniLM-L6-v2 have it; its reference is computed by loading the
rewritten folder. All other sentence-transformers folders keep the layout the
installed version writes ("st5" in the references).

Torch, transformers and sentence-transformers are needed only to regenerate the
fixtures, not in CI: the Rust tests read the committed folders and JSON files.
The script is deterministic (fixed seeds); each reference records the library
versions under "versions".

Usage:
  HF_HUB_OFFLINE=1 python scripts/make_hf_fixtures.py --out tests/data/hf \
      [--minilm .deps/minilm]
"""

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
from collections import Counter

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import sentence_transformers  # noqa: E402
import tokenizers  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from sentence_transformers import CrossEncoder, SentenceTransformer  # noqa: E402
from sentence_transformers.sentence_transformer import modules as st_models  # noqa: E402
from tokenizers import Tokenizer, normalizers, pre_tokenizers, trainers  # noqa: E402
from tokenizers import models as tok_models  # noqa: E402

torch.set_num_threads(1)
transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()

HIDDEN = 32
LAYERS = 2
HEADS = 4
INTERMEDIATE = 64
MAX_POS = 64
MAX_POS_ROBERTA = 66  # RoBERTa-like position ids start at padding_idx + 1 = 2
WEIGHT_STD = 0.2
VOCAB_SIZE = 480

# ---------------------------------------------------------------------------
# Text: a training corpus for the tokenizers and the texts the references use.
# ---------------------------------------------------------------------------

CORPUS = [
    "The quick brown fox jumps over the lazy dog. A lazy dog sleeps in the warm sun while the fox runs "
    "across the field, and the farmer watches them both from the old wooden gate.",
    "Machine learning models turn text into vectors. A tokenizer splits each sentence into word pieces, "
    "the encoder reads the pieces, and a pooling layer averages the hidden states into one embedding.",
    "Search engines rank documents by how well they match a query. A cross encoder reads the query and "
    "the passage together and returns a single relevance score for the pair.",
    "The weather today is sunny and warm, so we will walk to the park, eat lunch near the river, and come "
    "back home before the evening rain starts.",
    "Deep learning is a branch of machine learning that uses neural networks with many layers. Training "
    "needs data, a loss function, and an optimizer that updates the weights step by step.",
    "Hello world! This is a simple test. Numbers such as 1, 2, 3, 42, 100 and 3.14 appear in text, as do "
    "questions like what, why, how, where and when?",
    "Good food and good friends make a happy evening: bread, cheese, pizza, pasta, soup, ice cream and "
    "coffee are served at the small cafe on the corner of the street.",
    "Positive reviews say the product is great, excellent and worth the price. Negative reviews say it is "
    "bad, slow and broken. Neutral reviews say it is fine, okay, or average.",
    "Crème brûlée à Paris, café au lait, naïve façade. 今天天气很好，我们去公园。 Emoji: 🍕 😀 🎉",
]

LONG_A = (
    "Once upon a time, in a small village near the river, there lived an old farmer who kept a brown "
    "dog, a lazy cat and a quick red fox that nobody could ever catch. Every morning the farmer walked "
    "across the field to the wooden gate, looked at the sky, and decided whether it would rain. "
) * 6
LONG_B = (
    "Search engines and question answering systems use neural networks to encode queries and "
    "documents into vectors; the vectors are compared with cosine similarity, the best matches are "
    "reranked by a cross encoder, and the final list is shown to the user within a few milliseconds. "
) * 8
LONG_C = (
    "Training a model needs good data, a clear loss function and patience: the optimizer updates "
    "weights step by step, the learning rate decays, checkpoints are saved every hour, and engineers "
    "watch the validation curves to see whether the model still improves or starts to overfit. "
) * 10

TEXTS = [
    "Hello WORLD",
    "",
    "The quick brown fox jumps over the lazy dog.",
    "!!! ??? ... ,,, ;:; -- () [] {} @#$%",
    "Crème brûlée à Paris",
    "今天天气很好，我们去公园散步吧。",
    "I love pizza 🍕🎉 and ice cream 😀!",
    "a",
    "What is deep learning?",
    "Tokenizers split text into word pieces, and models turn those pieces into vectors.",
    "   leading and trailing spaces   ",
    "tab\tseparated\nnew line",
    "MiXeD CaSe WiTh NuMbErS 12345 and 3.14159",
    LONG_A,
    LONG_B,
    LONG_C,
]

PAIRS = [
    ["What is deep learning?", "Deep learning is a branch of machine learning that uses neural networks."],
    ["What is deep learning?", "The weather today is sunny and warm."],
    ["how do search engines rank documents", "Search engines rank documents by how well they match a query."],
    ["", "only a passage"],
    ["only a query", ""],
    ["Crème brûlée à Paris", "今天天气很好 🍕"],
    ["Who watches the fox?", LONG_A],
    [LONG_B, "A cross encoder reads the query and the passage together."],
    ["Tell me about training", LONG_C],
]


def versions():
    return {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "sentence_transformers": sentence_transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "numpy": np.__version__,
        "python": sys.version.split()[0],
    }


# ---------------------------------------------------------------------------
# Tokenizers: trained here, wrapped in the family's own tokenizer class.
# ---------------------------------------------------------------------------


def train_wordpiece(specials):
    """A WordPiece vocabulary learnt as tokenizers' WordPieceTrainer does (BPE merges over words, "##" on
    non-initial pieces), but with ties broken by the pieces' text: the trainer itself breaks ties in hash
    order, so its vocabulary changes from run to run. Words come from the tokenizers library's
    BertNormalizer + BertPreTokenizer, i.e. what the tokenizer will see."""
    norm = normalizers.BertNormalizer(lowercase=True)
    pre = pre_tokenizers.BertPreTokenizer()
    counts = Counter(w for line in CORPUS for w, _ in pre.pre_tokenize_str(norm.normalize_str(line)))
    words = {w: [w[0]] + ["##" + c for c in w[1:]] for w in sorted(counts)}
    vocab = list(specials)
    for sym in sorted({s for pieces in words.values() for s in pieces}):
        if sym not in vocab:
            vocab.append(sym)
    while len(vocab) < VOCAB_SIZE:
        pairs = Counter()
        for w, pieces in words.items():
            for a, b in zip(pieces, pieces[1:]):
                pairs[(a, b)] += counts[w]
        if not pairs:
            break
        (a, b), _ = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
        merged = a + b[2:]
        if merged not in vocab:
            vocab.append(merged)
        for w, pieces in words.items():
            i, out = 0, []
            while i < len(pieces):
                if i + 1 < len(pieces) and pieces[i] == a and pieces[i + 1] == b:
                    out.append(merged)
                    i += 2
                else:
                    out.append(pieces[i])
                    i += 1
            words[w] = out
    return {t: i for i, t in enumerate(vocab)}


def bert_tokenizer(model_max_length, cls=None):
    cls = cls or transformers.BertTokenizer
    vocab = train_wordpiece(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    return cls(vocab=vocab, do_lower_case=True, model_max_length=model_max_length)


def mpnet_tokenizer(model_max_length):
    # As the released MPNet vocabularies: <s>=0 <pad>=1 </s>=2 <unk>=3, unk_token "[UNK]" further on.
    vocab = train_wordpiece(["<s>", "<pad>", "</s>", "<unk>", "[UNK]", "<mask>"])
    return transformers.MPNetTokenizer(vocab=vocab, do_lower_case=True, model_max_length=model_max_length)


def train_byte_level_bpe(specials, corpus=CORPUS, vocab_size=VOCAB_SIZE, pre_tokenizer=None, normalizer=None):
    """A byte-level BPE (vocabulary, merges) learnt by tokenizers' BpeTrainer over the corpus: the 256
    byte symbols, then the merges; `specials` first. The pre-tokenizer defaults to GPT-2's ByteLevel."""
    tok = Tokenizer(tok_models.BPE())
    if normalizer is not None:
        tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer or pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(specials),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return model["vocab"], merges


def roberta_tokenizer(model_max_length):
    vocab, merges = train_byte_level_bpe(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    return transformers.RobertaTokenizer(vocab=vocab, merges=merges, model_max_length=model_max_length)


def train_unigram(specials):
    """A sentencepiece-like Unigram vocabulary: the pieces are those tokenizers' BpeTrainer learns over
    Metaspace ("\u2581"-prefixed) words, each scored log(p) from how often the trained BPE uses it on the
    corpus. (tokenizers' UnigramTrainer breaks ties in hash order, so its vocabulary changes from run to
    run; BpeTrainer over these words does not.)"""
    tok = Tokenizer(tok_models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")]
    )
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=specials, show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    used = Counter(t for line in CORPUS for t in tok.encode(line).tokens)
    vocab = tok.get_vocab()
    pieces = sorted(vocab, key=vocab.get)
    total = sum(used.values()) + len(pieces)
    return [(p, 0.0) if p in specials else (p, math.log((used[p] + 1) / total)) for p in pieces]


def xlmr_tokenizer(model_max_length):
    # XLMRobertaTokenizer hard-codes unk_id 3: <s>=0 <pad>=1 </s>=2 <unk>=3 as in the released vocabularies.
    vocab = train_unigram(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    return transformers.XLMRobertaTokenizer(vocab=vocab, model_max_length=model_max_length)


def camembert_tokenizer(model_max_length):
    # As camembert-base: <s>NOTUSED <pad> </s>NOTUSED <unk> <unk>NOTUSED first; <s>, </s> and <mask> specials.
    vocab = train_unigram(["<s>NOTUSED", "<pad>", "</s>NOTUSED", "<unk>", "<unk>NOTUSED", "<s>", "</s>"])
    vocab.append(("<mask>", 0.0))
    return transformers.CamembertTokenizer(vocab=vocab, model_max_length=model_max_length)


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------


def common_config(tok, roberta_like=False):
    kw = dict(
        vocab_size=len(tok),
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=INTERMEDIATE,
        max_position_embeddings=MAX_POS_ROBERTA if roberta_like else MAX_POS,
        initializer_range=WEIGHT_STD,
        pad_token_id=tok.pad_token_id,
    )
    if roberta_like:
        kw.update(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    return kw


def make_config(family, tok, **extra):
    if family == "bert":
        cfg = transformers.BertConfig(**common_config(tok), type_vocab_size=2)
    elif family == "roberta":
        cfg = transformers.RobertaConfig(**common_config(tok, True), type_vocab_size=1)
    elif family == "xlm-roberta":
        cfg = transformers.XLMRobertaConfig(**common_config(tok, True), type_vocab_size=1)
    elif family == "camembert":
        cfg = transformers.CamembertConfig(**common_config(tok, True), type_vocab_size=1)
    elif family == "mpnet":
        kw = common_config(tok, True)
        kw.pop("bos_token_id")
        kw.pop("eos_token_id")
        cfg = transformers.MPNetConfig(**kw, relative_attention_num_buckets=32)
    elif family == "electra":
        cfg = transformers.ElectraConfig(**common_config(tok), embedding_size=16, type_vocab_size=2)
    elif family == "distilbert":
        cfg = transformers.DistilBertConfig(
            vocab_size=len(tok),
            dim=HIDDEN,
            n_layers=LAYERS,
            n_heads=HEADS,
            hidden_dim=INTERMEDIATE,
            max_position_embeddings=MAX_POS,
            initializer_range=WEIGHT_STD,
            pad_token_id=tok.pad_token_id,
        )
    else:
        raise ValueError(family)
    for k, v in extra.items():
        setattr(cfg, k, v)
    return cfg


def randomize(model, seed):
    """Redraw every parameter: weights N(0, 0.2), LayerNorm gains 1 + N(0, 0.3), biases N(0, 0.1)/N(0, 0.2)."""
    g = torch.Generator().manual_seed(seed)

    def normal(shape, std, mean=0.0):
        return torch.randn(shape, generator=g) * std + mean

    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            is_norm = "norm" in name.lower()
            if is_norm and name.endswith("weight"):
                p.copy_(normal(p.shape, 0.3, 1.0))
            elif is_norm and name.endswith("bias"):
                p.copy_(normal(p.shape, 0.2))
            elif name.endswith("bias"):
                p.copy_(normal(p.shape, 0.1))
            else:
                p.copy_(normal(p.shape, WEIGHT_STD))
    return model


def save_hf(model, tok, path):
    model.save_pretrained(path)
    tok.save_pretrained(path)


def tidy(path):
    """Drop model cards the libraries wrote; they are not needed to load the folder."""
    for root, _dirs, files in os.walk(path):
        for f in files:
            if f == "README.md":
                os.remove(os.path.join(root, f))


def f32list(x):
    return [[float(v) for v in row] for row in np.asarray(x, dtype=np.float32).reshape(len(x), -1)]


def unpadded_ids(features):
    ids = features["input_ids"].tolist()
    mask = features["attention_mask"].tolist()
    return [[t for t, m in zip(r, mr) if m] for r, mr in zip(ids, mask)]


def min_pairwise_cos_distance(emb):
    e = np.asarray(emb, dtype=np.float64)
    n = e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
    sim = n @ n.T
    iu = np.triu_indices(len(e), 1)
    return float((1.0 - sim[iu]).min())


def check_tokenizer_json(folder, texts, library_ids, max_len, pairs=False):
    """The folder's tokenizer.json (read by the `tokenizers` library alone, as the Rust side does)
    must give the ids the Python library fed, once truncated to max_len."""
    tj = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    tj.no_truncation()
    tj.no_padding()
    if pairs:
        tj.enable_truncation(max_len, strategy="longest_first")
        got = [tj.encode(a, b).ids for a, b in texts]
    else:
        tj.enable_truncation(max_len)
        got = [tj.encode(t).ids for t in texts]
    bad = [i for i, (a, b) in enumerate(zip(got, library_ids)) if a != b]
    if bad:
        raise SystemExit(f"{folder}: tokenizer.json ids differ from the library's for texts {bad}")


def check_autotokenizer(folder, tok, texts):
    auto = transformers.AutoTokenizer.from_pretrained(folder)
    a = auto(texts)["input_ids"]
    b = tok(texts)["input_ids"]
    if a != b:
        raise SystemExit(f"{folder}: AutoTokenizer round trip changed the ids")
    return auto


def flat(obj):
    """A record in a list (a dict of plain values, e.g. one pipeline entity) on one line; None otherwise."""
    if isinstance(obj, dict) and obj and all(isinstance(v, (str, int, float, bool)) or v is None for v in obj.values()):
        return json.dumps(obj, ensure_ascii=False)
    return None


def dumps(obj, ind=0):
    """JSON with one row of numbers (or one text, or one pair) per line."""
    pad = " " * ind
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f"{pad} {json.dumps(k, ensure_ascii=False)}: {dumps(v, ind + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list) and obj:
        numbers = all(isinstance(x, (int, float)) for x in obj)
        pair = len(obj) <= 2 and all(isinstance(x, str) for x in obj)
        if not (numbers or pair):
            return "[\n" + ",\n".join(f"{pad} {flat(v) or dumps(v, ind + 1)}" for v in obj) + "\n" + pad + "]"
    return json.dumps(obj, ensure_ascii=False)


def write_json(path, obj):
    assert json.loads(dumps(obj)) == obj
    with open(path, "w", encoding="utf-8") as f:
        f.write(dumps(obj) + "\n")


# ---------------------------------------------------------------------------
# Embedding models (sentence-transformers)
# ---------------------------------------------------------------------------

HUB_POOLING_FLAGS = [
    ("pooling_mode_cls_token", "cls"),
    ("pooling_mode_mean_tokens", "mean"),
    ("pooling_mode_max_tokens", "max"),
    ("pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens"),
    ("pooling_mode_weightedmean_tokens", "weightedmean"),
    ("pooling_mode_lasttoken", "lasttoken"),
]


def rewrite_hub_layout(path, max_seq_length, hf_dir):
    """Rewrite a folder sentence-transformers just saved into the layout of older hub models."""
    # The tokenizer files as the tokenizer itself saved them (sentence-transformers would write its
    # max_seq_length into model_max_length); the limit lives in sentence_bert_config.json only.
    shutil.copy(os.path.join(hf_dir, "tokenizer_config.json"), os.path.join(path, "tokenizer_config.json"))
    with open(os.path.join(path, "modules.json")) as f:
        modules = json.load(f)
    hub_types = {
        "Transformer": "sentence_transformers.models.Transformer",
        "Pooling": "sentence_transformers.models.Pooling",
        "Dense": "sentence_transformers.models.Dense",
        "Normalize": "sentence_transformers.models.Normalize",
    }
    for m in modules:
        m["type"] = hub_types[m["type"].rsplit(".", 1)[1]]
        if m["type"].endswith("Normalize"):
            # Hub repositories have no 2_Normalize folder (git keeps no empty folders).
            shutil.rmtree(os.path.join(path, m["path"]), ignore_errors=True)
        if m["type"].endswith("Pooling"):
            pcfg_path = os.path.join(path, m["path"], "config.json")
            with open(pcfg_path) as f:
                pcfg = json.load(f)
            modes = pcfg["pooling_mode"]
            modes = [modes] if isinstance(modes, str) else list(modes)
            hub = {"word_embedding_dimension": pcfg["embedding_dimension"]}
            for key, mode in HUB_POOLING_FLAGS:
                hub[key] = mode in modes
            hub["include_prompt"] = pcfg.get("include_prompt", True)
            with open(pcfg_path, "w") as f:
                json.dump(hub, f, indent=4)
    with open(os.path.join(path, "modules.json"), "w") as f:
        json.dump(modules, f, indent=2)
    with open(os.path.join(path, "sentence_bert_config.json"), "w") as f:
        json.dump({"max_seq_length": max_seq_length, "do_lower_case": False}, f, indent=2)
    # Hub models written by sentence-transformers 2.x carry only the version block.
    with open(os.path.join(path, "config_sentence_transformers.json"), "w") as f:
        json.dump(
            {
                "__version__": {
                    "sentence_transformers": "2.0.0",
                    "transformers": "4.6.1",
                    "pytorch": "1.8.1",
                }
            },
            f,
            indent=2,
        )


EMBEDDING_SPECS = [
    # tok_max: the tokenizer's own model_max_length; max_seq_length: given to models.Transformer (None: not set)
    dict(name="bert-hub", family="bert", tok=bert_tokenizer, tok_max=64, pooling="mean", max_seq_length=20,
         normalize=True, layout="hub", seed=101),
    dict(name="bert-st5", family="bert", tok=bert_tokenizer, tok_max=24, pooling="cls", max_seq_length=None,
         dense=(16, "tanh"), normalize=True, layout="st5", seed=102,
         prompts={"query": "query: ", "passage": "passage: "}, default_prompt_name="query",
         similarity_fn_name="cosine"),
    dict(name="roberta-max", family="roberta", tok=roberta_tokenizer, tok_max=64, pooling="max",
         max_seq_length=30, normalize=False, layout="st5", seed=103),
    dict(name="xlmr-weighted", family="xlm-roberta", tok=xlmr_tokenizer, tok_max=64, pooling="weightedmean",
         max_seq_length=40, normalize=True, layout="st5", seed=104),
    dict(name="camembert-mean", family="camembert", tok=camembert_tokenizer, tok_max=64, pooling="mean",
         max_seq_length=30, normalize=True, layout="st5", seed=105),
    dict(name="distilbert-cls", family="distilbert", tok=lambda n: bert_tokenizer(n, transformers.DistilBertTokenizer),
         tok_max=64, pooling="cls", max_seq_length=None, normalize=True, layout="st5", seed=106),
    dict(name="mpnet-mean", family="mpnet", tok=mpnet_tokenizer, tok_max=64, pooling="mean", max_seq_length=60,
         normalize=True, layout="st5", seed=107),
    dict(name="bert-multi", family="bert", tok=bert_tokenizer, tok_max=64,
         pooling=("mean_sqrt_len_tokens", "lasttoken", "max"), max_seq_length=None, normalize=False,
         layout="st5", seed=108, config_extra={"hidden_act": "gelu_new"}),
    dict(name="electra-mean", family="electra", tok=bert_tokenizer, tok_max=64, pooling="mean",
         max_seq_length=None, normalize=True, layout="st5", seed=109),
]


def make_embedding(spec, out, tmp):
    name = spec["name"]
    folder = os.path.join(out, name)
    hf_dir = os.path.join(tmp, name + "-hf")
    tok = spec["tok"](spec["tok_max"])
    cfg = make_config(spec["family"], tok, **spec.get("config_extra", {}))
    model = randomize(transformers.AutoModel.from_config(cfg), spec["seed"])
    model.eval()
    save_hf(model, tok, hf_dir)
    check_autotokenizer(hf_dir, tok, TEXTS)

    torch.manual_seed(spec["seed"])
    tkw = {}
    if spec["max_seq_length"] is not None:
        tkw["max_seq_length"] = spec["max_seq_length"]
    transformer = st_models.Transformer(hf_dir, **tkw)
    modules = [transformer, st_models.Pooling(HIDDEN, pooling_mode=spec["pooling"])]
    if "dense" in spec:
        out_dim, act = spec["dense"]
        dense = st_models.Dense(
            modules[-1].get_embedding_dimension(), out_dim, activation_function={"tanh": torch.nn.Tanh()}[act]
        )
        randomize(dense, spec["seed"] + 1000)
        modules.append(dense)
    if spec["normalize"]:
        modules.append(st_models.Normalize())
    st_kw = {}
    for k in ("prompts", "default_prompt_name", "similarity_fn_name"):
        if k in spec:
            st_kw[k] = spec[k]
    st = SentenceTransformer(modules=modules, device="cpu", **st_kw)
    if os.path.exists(folder):
        shutil.rmtree(folder)
    st.save(folder, create_model_card=False)
    if spec["layout"] == "hub":
        rewrite_hub_layout(folder, spec["max_seq_length"], hf_dir)
    tidy(folder)

    # The reference: what sentence-transformers does with the folder as written.
    st = SentenceTransformer(folder, device="cpu")
    st.eval()
    max_len = st.max_seq_length
    ids = unpadded_ids(st.preprocess(TEXTS))  # what `model.tokenize` (deprecated alias) returns
    check_tokenizer_json(folder, TEXTS, ids, max_len)
    emb = st.encode(TEXTS, convert_to_numpy=True)
    if not np.array_equal(emb, st.encode(TEXTS[::-1], convert_to_numpy=True)[::-1]):
        raise SystemExit(f"{name}: encode is not repeatable (dropout active?)")
    dist = min_pairwise_cos_distance(emb)
    print(f"{name}: max_seq_length={max_len} dim={emb.shape[1]} min pairwise cosine distance={dist:.4f}")
    ref = {
        "name": name,
        "family": st[0].auto_model.config.model_type,
        "layout": spec["layout"],
        "kind": "embedding",
        "versions": versions(),
        "max_seq_length": max_len,
        "pooling": list(spec["pooling"]) if isinstance(spec["pooling"], tuple) else [spec["pooling"]],
        "normalize": spec["normalize"],
        "texts": TEXTS,
        "input_ids": ids,
        "embeddings": f32list(emb),
    }
    if "prompts" in spec:
        ref["prompts"] = st.prompts
        ref["default_prompt_name"] = st.default_prompt_name
        ref["embeddings_by_prompt"] = {}
        ref["input_ids_by_prompt"] = {}
        for pname, ptext in [("query", None), ("passage", None), ("", "")]:
            if pname:
                e = st.encode(TEXTS, prompt_name=pname, convert_to_numpy=True)
                ptext = st.prompts[pname]
            else:
                e = st.encode(TEXTS, prompt="", convert_to_numpy=True)
            ref["embeddings_by_prompt"][pname] = f32list(e)
            ref["input_ids_by_prompt"][pname] = unpadded_ids(st.preprocess(TEXTS, prompt=ptext))
            if ref["input_ids_by_prompt"][pname] != unpadded_ids(st.preprocess([ptext + t for t in TEXTS])):
                raise SystemExit(f"{name}: the prompt is not simply prepended to the text")
        if ref["embeddings_by_prompt"][st.default_prompt_name] != ref["embeddings"]:
            raise SystemExit(f"{name}: default-prompt embeddings differ from prompt_name={st.default_prompt_name}")
        if ref["input_ids_by_prompt"][""] != ids:
            raise SystemExit(f"{name}: prompt='' changed the token ids")
    write_json(os.path.join(out, "references", name + ".json"), ref)


# ---------------------------------------------------------------------------
# Classifiers (transformers) and the cross-encoder (sentence-transformers)
# ---------------------------------------------------------------------------

CLASSIFIER_SPECS = [
    dict(name="bert-cls3", family="bert", tok=bert_tokenizer, tok_max=32, num_labels=3,
         id2label={0: "negative", 1: "neutral", 2: "positive"}, seed=201),
    dict(name="distilbert-multilabel", family="distilbert",
         tok=lambda n: bert_tokenizer(n, transformers.DistilBertTokenizer), tok_max=48, num_labels=4,
         id2label={0: "sports", 1: "food", 2: "weather", 3: "technology"},
         problem_type="multi_label_classification", seed=202),
    dict(name="mpnet-cls2", family="mpnet", tok=mpnet_tokenizer, tok_max=40, num_labels=2, seed=203),
    dict(name="xlmr-cls2", family="xlm-roberta", tok=xlmr_tokenizer, tok_max=36, num_labels=2, seed=204),
    dict(name="electra-cls2", family="electra", tok=bert_tokenizer, tok_max=28, num_labels=2, seed=205),
]


def make_classifier(spec, out):
    name = spec["name"]
    folder = os.path.join(out, name)
    tok = spec["tok"](spec["tok_max"])
    cfg = make_config(spec["family"], tok)
    cfg.num_labels = spec["num_labels"]
    if "id2label" in spec:
        cfg.id2label = dict(spec["id2label"])
        cfg.label2id = {v: k for k, v in spec["id2label"].items()}
    if "problem_type" in spec:
        cfg.problem_type = spec["problem_type"]
    model = randomize(transformers.AutoModelForSequenceClassification.from_config(cfg), spec["seed"])
    if os.path.exists(folder):
        shutil.rmtree(folder)
    save_hf(model, tok, folder)
    tidy(folder)

    # The reference: reload the folder the way users do.
    tok = check_autotokenizer(folder, tok, TEXTS)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder)
    model.eval()
    max_len = tok.model_max_length
    ids = tok(TEXTS, truncation=True)["input_ids"]
    check_tokenizer_json(folder, TEXTS, ids, max_len)
    with torch.no_grad():
        enc = tok(TEXTS, truncation=True, padding=True, return_tensors="pt")
        logits = model(**enc).logits.numpy()
    pipe = transformers.pipeline("text-classification", model=folder, tokenizer=folder, device="cpu", top_k=None)
    results = pipe(TEXTS, truncation=True)
    label2id = model.config.label2id
    scores = np.zeros((len(TEXTS), model.config.num_labels), dtype=np.float64)
    for i, res in enumerate(results):
        for r in res:
            scores[i, label2id[r["label"]]] = r["score"]
    if model.config.problem_type == "multi_label_classification" or model.config.num_labels == 1:
        activation = "sigmoid"
        expect = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
    else:
        activation = "softmax"
        z = logits.astype(np.float64) - logits.max(axis=1, keepdims=True)
        expect = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    if not np.allclose(scores, expect, atol=1e-5):
        raise SystemExit(f"{name}: pipeline scores are not {activation}(logits)")
    spread = float(np.abs(logits[:, None, :] - logits[None, :, :]).max(axis=2)[np.triu_indices(len(TEXTS), 1)].min())
    print(f"{name}: max_len={max_len} activation={activation} min pairwise max|dlogit|={spread:.4f}")
    ref = {
        "name": name,
        "family": model.config.model_type,
        "layout": "transformers",
        "kind": "classification",
        "versions": versions(),
        "max_seq_length": max_len,
        "truncation": True,
        "problem_type": model.config.problem_type,
        "id2label": {str(k): v for k, v in model.config.id2label.items()},
        "activation": activation,
        "texts": TEXTS,
        "input_ids": ids,
        "logits": f32list(logits),
        "scores": [[float(v) for v in row] for row in scores],
    }
    write_json(os.path.join(out, "references", name + ".json"), ref)


def make_cross_encoder(out, tmp):
    name = "roberta-cross-encoder"
    folder = os.path.join(out, name)
    hf_dir = os.path.join(tmp, name + "-hf")
    tok = roberta_tokenizer(64)
    cfg = make_config("roberta", tok)
    cfg.num_labels = 1
    model = randomize(transformers.RobertaForSequenceClassification(cfg), 301)
    save_hf(model, tok, hf_dir)
    ce = CrossEncoder(hf_dir, max_length=40, device="cpu")
    if os.path.exists(folder):
        shutil.rmtree(folder)
    ce.save(folder, create_model_card=False)
    tidy(folder)

    ce = CrossEncoder(folder, device="cpu")
    ce.eval()
    max_len = ce.max_seq_length
    pairs = [tuple(p) for p in PAIRS]
    features = ce.preprocess(pairs)
    pair_ids = unpadded_ids(features)
    check_tokenizer_json(folder, pairs, pair_ids, max_len, pairs=True)
    activation = type(ce.activation_fn).__name__
    scores = ce.predict(pairs, convert_to_numpy=True)
    logits = ce.predict(pairs, activation_fn=torch.nn.Identity(), convert_to_numpy=True)
    if not np.array_equal(scores, ce.predict(pairs[::-1], convert_to_numpy=True)[::-1]):
        raise SystemExit("cross-encoder: predict is not repeatable (dropout active?)")
    if activation == "Sigmoid":
        act = "sigmoid"
        if not np.allclose(scores, 1.0 / (1.0 + np.exp(-logits.astype(np.float64))), atol=1e-6):
            raise SystemExit("cross-encoder: scores are not sigmoid(logits)")
    elif activation == "Identity":
        act = "identity"
    else:
        raise SystemExit(f"cross-encoder: unexpected default activation {activation}")
    print(f"{name}: max_len={max_len} activation={act} logits={np.round(logits, 3).tolist()}")
    ref = {
        "name": name,
        "family": ce[0].auto_model.config.model_type,
        "layout": "st5",
        "kind": "cross-encoder",
        "versions": versions(),
        "max_seq_length": max_len,
        "truncation": "longest_first",
        "activation": act,
        "activation_fn": f"{type(ce.activation_fn).__module__}.{type(ce.activation_fn).__name__}",
        "pairs": [list(p) for p in pairs],
        "pair_input_ids": pair_ids,
        "logits": [[float(v)] for v in np.asarray(logits, dtype=np.float32).reshape(-1)],
        "scores": [[float(v)] for v in np.asarray(scores, dtype=np.float32).reshape(-1)],
    }
    write_json(os.path.join(out, "references", name + ".json"), ref)


# ---------------------------------------------------------------------------
# Library tables and the real all-MiniLM-L6-v2
# ---------------------------------------------------------------------------


def make_mpnet_buckets(out):
    from transformers.models.mpnet.modeling_mpnet import MPNetEncoder

    n = 128
    pos = torch.arange(n)
    relative_position = pos[None, :] - pos[:, None]  # [i][j] = j - i
    buckets = MPNetEncoder.relative_position_bucket(relative_position, num_buckets=32, max_distance=128)
    write_json(
        os.path.join(out, "references", "mpnet_buckets.json"),
        {
            "num_buckets": 32,
            "max_distance": 128,
            "positions": n,
            "relative_position": "relative_position[i][j] = j - i",
            "versions": versions(),
            "buckets": buckets.tolist(),
        },
    )


MINILM_LONG = [
    (
        "The history of natural language processing generally started in the 1950s, although work can be "
        "found from earlier periods. In 1950, Alan Turing published an article titled Computing Machinery "
        "and Intelligence which proposed what is now called the Turing test as a criterion of intelligence. "
    )
    * 7,
    (
        "Sentence embeddings map a piece of text to a fixed-size vector so that texts with similar meaning "
        "are close to each other. They are used for semantic search, clustering, deduplication and "
        "retrieval augmented generation, where a question is embedded and compared with stored passages. "
    )
    * 9,
    (
        "Rust is a multi-paradigm, general-purpose programming language that emphasizes performance, type "
        "safety and concurrency. It enforces memory safety without a garbage collector, using a borrow "
        "checker that tracks the object lifetime of references at compile time; unsafe blocks opt out. "
    )
    * 12,
]


def make_minilm(out, path):
    st = SentenceTransformer(path, device="cpu")
    st.eval()
    texts = TEXTS + MINILM_LONG
    ids = unpadded_ids(st.preprocess(texts))
    long_count = sum(1 for t in texts if len(st.tokenizer(t)["input_ids"]) > 256)
    if long_count < 3:
        raise SystemExit("all-MiniLM-L6-v2: fewer than 3 texts exceed 256 word pieces")
    # Its tokenizer.json bakes in truncation at 128 and fixed padding to 128; sentence-transformers
    # truncates at max_seq_length (256) instead. check_tokenizer_json drops both before comparing.
    check_tokenizer_json(path, texts, ids, st.max_seq_length)
    emb = st.encode(texts, convert_to_numpy=True)
    print(f"all-minilm-l6-v2: max_seq_length={st.max_seq_length} texts over 256 pieces={long_count}")
    write_json(
        os.path.join(out, "references", "all-minilm-l6-v2.json"),
        {
            "name": "all-minilm-l6-v2",
            "family": st[0].auto_model.config.model_type,
            "layout": "hub",
            "kind": "embedding",
            "versions": versions(),
            "max_seq_length": st.max_seq_length,
            "pooling": ["mean"],
            "normalize": True,
            "texts": texts,
            "input_ids": ids,
            "embeddings": f32list(emb),
        },
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output folder, e.g. tests/data/hf")
    ap.add_argument("--minilm", default=None, help="the real all-MiniLM-L6-v2 folder (hub layout), e.g. .deps/minilm")
    ap.add_argument("--only", nargs="*", default=None, help="make only these names")
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(os.path.join(out, "references"), exist_ok=True)
    torch.manual_seed(0)
    np.random.seed(0)

    def wanted(n):
        return args.only is None or n in args.only

    with tempfile.TemporaryDirectory() as tmp:
        for spec in EMBEDDING_SPECS:
            if wanted(spec["name"]):
                make_embedding(spec, out, tmp)
        for spec in CLASSIFIER_SPECS:
            if wanted(spec["name"]):
                make_classifier(spec, out)
        if wanted("roberta-cross-encoder"):
            make_cross_encoder(out, tmp)
    if wanted("mpnet_buckets"):
        make_mpnet_buckets(out)
    if args.minilm and wanted("all-minilm-l6-v2"):
        make_minilm(out, args.minilm)


if __name__ == "__main__":
    main()
