#!/usr/bin/env python3
"""Make small HuggingFace model folders of more families (Qwen2 and Mistral decoder embedders, NomicBERT,
GTE) and the reference outputs the real libraries compute from them, for the Rust HuggingFace-folder
importer's tests. A companion of make_hf_fixtures.py and make_hf_fixtures_32.py: same conventions (tiny
random-weight models, small deterministic tokenizers trained on the same corpus, the same 16 texts
including empty, unicode and three texts longer than the length limit, the same reference JSON layout);
their helpers are imported from there.

Folders written under --out (each by the libraries themselves: transformers `save_pretrained`,
sentence-transformers `SentenceTransformer.save`):

  qwen2-embed     Qwen2Model as gte-Qwen2 is built: q/k/v biases, no q/k norm, grouped-query attention
                  (4 heads / 2 KV heads), use_sliding_window with max_window_layers 1 and sliding_window 8
                  (layer 1 attends the last 8 positions only) + last-token pooling + Normalize,
                  max_seq_length 48; the Qwen tokenizer whose post-processor appends <|endoftext|>,
                  padding_side left.
  mistral-embed   MistralModel as e5-mistral is built: no biases, 4 heads / 1 KV head of head_dim 16
                  (heads * head_dim is twice the hidden size), sliding_window 8 on every layer +
                  last-token pooling + Normalize, max_seq_length 48; a byte-level BPE with Llama's
                  <unk> <s> </s>, a `<s> $A </s>` post-processor, pad token </s>, padding_side right.
  nomic-mean      NomicBertModel as nomic-embed-text-v1.5 is built (post-LayerNorm, rotary theta 1000, gated
                  SiLU, no biases, two token types) + mean pooling + Normalize, max_seq_length 48, BERT's
                  WordPiece tokenizer. transformers writes the hub's weight names (emb_ln, attn.Wqkv, fc11,
                  fc12, fc2, norm1, norm2), which is what the importer reads.
  bge-m3          XLMRobertaModel + CLS pooling + Normalize (BGE-M3's dense side, as its sentence-transformers
                  files say) and BGE-M3's `sparse_linear` head (Linear(hidden, 1)) as sparse_linear.safetensors;
                  the reference is FlagEmbedding's M3Embedder (BGEM3FlagModel) on a copy of the folder with the
                  head saved as FlagEmbedding saves it (sparse_linear.pt, colbert_linear.pt, torch.save of the
                  state dicts): lexical weights (max of relu(Linear(h)) per token id, special tokens dropped)
                  and dense vectors, in float32.
  gte-cls         GteModel as gte-multilingual-base is built (post-LayerNorm, rotary theta 160000, gated GELU,
                  q/k/v/o and down-projection biases, one token type) + CLS pooling + Normalize; the hub's
                  weight names (attention.qkv_proj, mlp.up_gate_proj, attn_ln, mlp_ln).

References go to references/<name>.json; every number in them is computed by transformers /
sentence-transformers / torch on the folder as written (reloaded from disk), nothing by hand except the
cross-checks, which only assert.

Usage:
  HF_HUB_OFFLINE=1 python scripts/make_hf_fixtures_33.py --out tests/data/hf [--only NAME ...]
"""

import argparse
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from make_hf_fixtures import (  # noqa: E402
    HEADS,
    HIDDEN,
    INTERMEDIATE,
    MAX_POS_ROBERTA,
    TEXTS,
    VOCAB_SIZE,
    WEIGHT_STD,
    bert_tokenizer,
    check_autotokenizer,
    check_tokenizer_json,
    f32list,
    make_config,
    min_pairwise_cos_distance,
    randomize,
    save_hf,
    tidy,
    train_byte_level_bpe,
    unpadded_ids,
    versions,
    write_json,
    xlmr_tokenizer,
)
from make_hf_fixtures_32 import (  # noqa: E402
    QWEN3_EMBED_PROMPTS,
    check_prompted_ids,
    qwen_tokenizer,
    read_json,
    safetensors_index,
    tokenizer_json_summary,
)
import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402
from sentence_transformers.sentence_transformer import modules as st_models  # noqa: E402
from tokenizers import AddedToken, Tokenizer, decoders, pre_tokenizers, processors  # noqa: E402
from tokenizers import models as tok_models  # noqa: E402

DECODER_MAX_SEQ = 48
DECODER_MAX_POS = 128
SLIDING_WINDOW = 8

# ---------------------------------------------------------------------------
# Decoder embedders (Qwen2, Mistral): one builder, one reference writer
# ---------------------------------------------------------------------------

MISTRAL_SPECIALS = ["<unk>", "<s>", "</s>"]


def mistral_tokenizer(model_max_length):
    """As e5-mistral's (a Llama tokenizer with add_eos_token): <unk> <s> </s> first, `<s> $A </s>`
    post-processor, pad </s>, right padding. Byte-level BPE stands in for the sentencepiece model."""
    vocab, merges = train_byte_level_bpe(MISTRAL_SPECIALS, vocab_size=VOCAB_SIZE)
    tok = Tokenizer(tok_models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in MISTRAL_SPECIALS])
    bos, eos = tok.token_to_id("<s>"), tok.token_to_id("</s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s>:0 $A:0 </s>:0",
        pair="<s>:0 $A:0 </s>:0 <s>:1 $B:1 </s>:1",
        special_tokens=[("<s>", bos), ("</s>", eos)],
    )
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        pad_token="</s>",
        model_max_length=model_max_length,
        padding_side="right",
        model_input_names=["input_ids", "attention_mask"],
    )


def save_st(hf_dir, folder, max_seq_length, pooling, seed, **st_kwargs):
    """The transformers folder as a sentence-transformers model (Transformer, Pooling, Normalize), saved
    by sentence-transformers into `folder` (replaced)."""
    torch.manual_seed(seed)
    st = SentenceTransformer(
        modules=[
            st_models.Transformer(hf_dir, max_seq_length=max_seq_length),
            st_models.Pooling(HIDDEN, pooling_mode=pooling),
            st_models.Normalize(),
        ],
        device="cpu",
        **st_kwargs,
    )
    if os.path.exists(folder):
        shutil.rmtree(folder)
    st.save(folder, create_model_card=False)
    tidy(folder)


def build_decoder_st(hf_dir, folder, seed):
    save_st(hf_dir, folder, DECODER_MAX_SEQ, "lasttoken", seed, prompts=dict(QWEN3_EMBED_PROMPTS),
            default_prompt_name=None, similarity_fn_name="cosine")


def decoder_embed_reference(name, folder, tok, eos_token, padding_side, sliding_layers):
    """Reloads the folder and records what sentence-transformers computes; asserts the tokenizer's
    padding side and appended end token, that eager attention agrees, and that the window changes
    exactly the texts longer than it on the sliding layers."""
    st = SentenceTransformer(folder, device="cpu")
    st.eval()
    am = st[0].auto_model
    cfg = am.config
    max_len = st.max_seq_length
    check_autotokenizer(folder, tok, TEXTS)
    feats = st.preprocess(TEXTS)
    mask = feats["attention_mask"]
    padded_at = 0 if padding_side == "left" else -1
    if st.tokenizer.padding_side != padding_side or (mask[:, padded_at] == 0).sum() == 0:
        raise SystemExit(f"{name}: sentence-transformers did not pad on the {padding_side}")
    ids = unpadded_ids(feats)
    eos = tok.convert_tokens_to_ids(eos_token)
    if any(t[-1] != eos for t in ids):
        raise SystemExit(f"{name}: not every text ends with {eos_token}")
    check_tokenizer_json(folder, TEXTS, ids, max_len)
    q_prompt = st.prompts["query"]
    q_ids = check_prompted_ids(st, TEXTS, q_prompt, name)
    check_tokenizer_json(folder, [q_prompt + t for t in TEXTS], q_ids, max_len)
    emb = st.encode(TEXTS, convert_to_numpy=True)
    q_emb = st.encode(TEXTS, prompt_name="query", convert_to_numpy=True)
    single = np.stack([st.encode([t], convert_to_numpy=True)[0] for t in TEXTS])
    if not np.allclose(single, emb, atol=1e-5):
        raise SystemExit(f"{name}: batched ({padding_side} padded) and one-by-one embeddings differ")
    eager = SentenceTransformer(folder, device="cpu", model_kwargs={"attn_implementation": "eager"})
    if not np.allclose(eager.encode(TEXTS, convert_to_numpy=True), emb, atol=1e-5):
        raise SystemExit(f"{name}: eager and {cfg._attn_implementation} attention differ")
    # The window matters for exactly the texts longer than it (they have a key it hides).
    wide = SentenceTransformer(folder, device="cpu")
    wide[0].auto_model.config.sliding_window = 10_000
    wide_emb = wide.encode(TEXTS, convert_to_numpy=True)
    for i, t_ids in enumerate(ids):
        differs = not np.allclose(wide_emb[i], emb[i], atol=1e-6)
        if differs != (len(t_ids) > SLIDING_WINDOW):
            raise SystemExit(f"{name}: text {i} ({len(t_ids)} tokens): window effect {differs}")
    layer_types = list(getattr(cfg, "layer_types", None) or [])
    print(f"{name}: max_seq_length={max_len} attn={cfg._attn_implementation} sliding_window={cfg.sliding_window}"
          f" sliding layers={sliding_layers} texts past the window={sum(len(t) > SLIDING_WINDOW for t in ids)}"
          f" min pairwise cosine distance={min_pairwise_cos_distance(emb):.4f}")
    return {
        "name": name,
        "family": cfg.model_type,
        "layout": "st5",
        "kind": "embedding",
        "versions": versions(),
        "max_seq_length": max_len,
        "pooling": ["lasttoken"],
        "normalize": True,
        "padding_side": padding_side,
        "eos_appended_by_post_processor": eos_token,
        "eos_id": eos,
        "pad_id": st.tokenizer.pad_token_id,
        "prompts": st.prompts,
        "default_prompt_name": st.default_prompt_name,
        "similarity_fn_name": st.similarity_fn_name,
        "attn_implementation": cfg._attn_implementation,
        "rope_parameters": cfg.rope_parameters,
        "num_attention_heads": cfg.num_attention_heads,
        "num_key_value_heads": cfg.num_key_value_heads,
        "head_dim": getattr(am.layers[0].self_attn, "head_dim"),
        "sliding_window": cfg.sliding_window,
        "layer_types": layer_types,
        "sliding_layers": sliding_layers,
        "sliding_window_rule": "on sliding layers query i attends key j iff i - sliding_window < j <= i "
        "(and j is not padding); on the others iff j <= i",
        "rms_norm_eps": cfg.rms_norm_eps,
        "hidden_act": cfg.hidden_act,
        "weights": safetensors_index(os.path.join(folder, "model.safetensors")),
        "tokenizer": tokenizer_json_summary(folder),
        "texts": TEXTS,
        "input_ids": ids,
        "embeddings": f32list(emb),
        "input_ids_by_prompt": {"query": q_ids, "document": ids},
        "embeddings_by_prompt": {"query": f32list(q_emb), "document": f32list(emb)},
    }


def decoder_dims(tok):
    """What the two decoder fixtures share: sizes, SiLU, untied embeddings, the sliding window."""
    return dict(vocab_size=len(tok), hidden_size=HIDDEN, intermediate_size=INTERMEDIATE, num_hidden_layers=2,
                num_attention_heads=HEADS, hidden_act="silu", max_position_embeddings=DECODER_MAX_POS,
                tie_word_embeddings=False, sliding_window=SLIDING_WINDOW, initializer_range=WEIGHT_STD,
                pad_token_id=tok.pad_token_id)


def make_qwen2(out, tmp):
    name = "qwen2-embed"
    folder = os.path.join(out, name)
    hf_dir = os.path.join(tmp, name + "-hf")
    tok = qwen_tokenizer(131072, append_eos=True, padding_side="left")
    cfg = transformers.Qwen2Config(
        **decoder_dims(tok),
        num_key_value_heads=2,
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        use_sliding_window=True,
        max_window_layers=1,
        bos_token_id=None,
        eos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
    )
    model = randomize(transformers.Qwen2Model(cfg), 601)
    model.eval()
    if model.config.layer_types != ["full_attention", "sliding_attention"]:
        raise SystemExit(f"{name}: layer types {model.config.layer_types}")
    save_hf(model, tok, hf_dir)
    build_decoder_st(hf_dir, folder, 601)
    ref = decoder_embed_reference(name, folder, tok, "<|endoftext|>", "left", [1])
    saved = read_json(os.path.join(folder, "config.json"))
    # Hub gte-Qwen2 configs name the window by use_sliding_window / max_window_layers, not layer_types.
    legacy = {k: v for k, v in saved.items() if k not in ("layer_types", "rope_parameters")}
    legacy["rope_theta"] = 1000000.0
    if transformers.Qwen2Config.from_dict(legacy).layer_types != model.config.layer_types:
        raise SystemExit(f"{name}: the legacy config keys do not load to the same layer types")
    ref["config_legacy_equivalent"] = {"use_sliding_window": True, "max_window_layers": 1, "rope_theta": 1000000.0}
    write_json(os.path.join(out, "references", name + ".json"), ref)


def make_mistral(out, tmp):
    name = "mistral-embed"
    folder = os.path.join(out, name)
    hf_dir = os.path.join(tmp, name + "-hf")
    tok = mistral_tokenizer(DECODER_MAX_POS)
    cfg = transformers.MistralConfig(
        **decoder_dims(tok),
        num_key_value_heads=1,
        head_dim=16,
        rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    model = randomize(transformers.MistralModel(cfg), 701)
    model.eval()
    save_hf(model, tok, hf_dir)
    build_decoder_st(hf_dir, folder, 701)
    ref = decoder_embed_reference(name, folder, tok, "</s>", "right", [0, 1])
    write_json(os.path.join(out, "references", name + ".json"), ref)


# ---------------------------------------------------------------------------
# Rotary post-LayerNorm encoders (NomicBERT, GTE)
# ---------------------------------------------------------------------------

ENCODER_MAX_POS = 64
ENCODER_MAX_SEQ = 48


def make_rotary_encoder(out, tmp, name, config_cls, model_cls, pooling, seed, **extra):
    folder = os.path.join(out, name)
    hf_dir = os.path.join(tmp, name + "-hf")
    tok = bert_tokenizer(ENCODER_MAX_POS)
    cfg = config_cls(
        vocab_size=len(tok),
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=2,
        num_attention_heads=HEADS,
        max_position_embeddings=ENCODER_MAX_POS,
        initializer_range=WEIGHT_STD,
        pad_token_id=tok.pad_token_id,
        **extra,
    )
    model = randomize(model_cls(cfg), seed)
    model.eval()
    save_hf(model, tok, hf_dir)
    check_autotokenizer(hf_dir, tok, TEXTS)
    save_st(hf_dir, folder, ENCODER_MAX_SEQ, pooling, seed)

    st = SentenceTransformer(folder, device="cpu")
    st.eval()
    am = st[0].auto_model
    feats = st.preprocess(TEXTS)
    ids = unpadded_ids(feats)
    check_tokenizer_json(folder, TEXTS, ids, st.max_seq_length)
    emb = st.encode(TEXTS, convert_to_numpy=True)
    eager = SentenceTransformer(folder, device="cpu", model_kwargs={"attn_implementation": "eager"})
    if not np.allclose(eager.encode(TEXTS, convert_to_numpy=True), emb, atol=1e-5):
        raise SystemExit(f"{name}: eager and {am.config._attn_implementation} attention differ")
    single = np.stack([st.encode([t], convert_to_numpy=True)[0] for t in TEXTS])
    if not np.allclose(single, emb, atol=1e-5):
        raise SystemExit(f"{name}: batched and one-by-one embeddings differ")
    print(f"{name}: max_seq_length={st.max_seq_length} attn={am.config._attn_implementation}"
          f" token_type_ids fed={'token_type_ids' in feats} min pairwise cosine distance="
          f"{min_pairwise_cos_distance(emb):.4f}")
    ref = {
        "name": name,
        "family": am.config.model_type,
        "layout": "st5",
        "kind": "embedding",
        "versions": versions(),
        "max_seq_length": st.max_seq_length,
        "pooling": [pooling],
        "normalize": True,
        "attn_implementation": am.config._attn_implementation,
        "rope_parameters": am.config.rope_parameters,
        "hidden_act": am.config.hidden_act,
        "layer_norm_eps": am.config.layer_norm_eps,
        "type_vocab_size": am.config.type_vocab_size,
        "token_type_ids_fed": "token_type_ids" in feats,
        "weights": safetensors_index(os.path.join(folder, "model.safetensors")),
        "texts": TEXTS,
        "input_ids": ids,
        "embeddings": f32list(emb),
    }
    write_json(os.path.join(out, "references", name + ".json"), ref)


def make_nomic(out, tmp):
    make_rotary_encoder(out, tmp, "nomic-mean", transformers.NomicBertConfig, transformers.NomicBertModel, "mean", 801,
                        hidden_act="silu", type_vocab_size=2, layer_norm_eps=1e-12,
                        rope_parameters={"rope_type": "default", "rope_theta": 1000.0})


def make_gte(out, tmp):
    make_rotary_encoder(out, tmp, "gte-cls", transformers.GteConfig, transformers.GteModel, "cls", 901,
                        hidden_act="gelu", type_vocab_size=1, layer_norm_eps=1e-12,
                        rope_parameters={"rope_type": "default", "rope_theta": 160000.0})


# ---------------------------------------------------------------------------
# BGE-M3: XLM-R with a sparse head, against FlagEmbedding
# ---------------------------------------------------------------------------


def m3_embedder():
    """FlagEmbedding 1.4.2's M3Embedder (BGEM3FlagModel). The package's __init__ imports every model it
    has, one of which needs a transformers 4 module (modeling_attn_mask_utils); the parent packages are
    stood in for by empty ones so that only the M3 embedder's own modules load, unchanged."""
    import importlib.util
    import types

    root = os.path.dirname(importlib.util.find_spec("FlagEmbedding").origin)
    for name, path in [("FlagEmbedding", root), ("FlagEmbedding.inference", os.path.join(root, "inference")),
                       ("FlagEmbedding.inference.embedder", os.path.join(root, "inference", "embedder"))]:
        if name not in sys.modules:
            m = types.ModuleType(name)
            m.__path__ = [path]
            sys.modules[name] = m
    from FlagEmbedding.inference.embedder.encoder_only.m3 import M3Embedder

    return M3Embedder


def make_bge_m3(out, tmp):
    from safetensors.torch import save_file

    name = "bge-m3"
    folder = os.path.join(out, name)
    hf_dir = os.path.join(tmp, name + "-hf")
    tok = xlmr_tokenizer(MAX_POS_ROBERTA)
    model = randomize(transformers.XLMRobertaModel(make_config("xlm-roberta", tok), add_pooling_layer=False), 1001)
    model.eval()
    save_hf(model, tok, hf_dir)
    save_st(hf_dir, folder, ENCODER_MAX_SEQ, "cls", 1001)
    g = torch.Generator().manual_seed(1002)
    sparse = {"weight": torch.randn(1, HIDDEN, generator=g) * 0.3, "bias": torch.tensor([0.1])}
    colbert = {"weight": torch.randn(HIDDEN, HIDDEN, generator=g) * 0.2, "bias": torch.zeros(HIDDEN)}
    save_file(sparse, os.path.join(folder, "sparse_linear.safetensors"))
    # FlagEmbedding reads only the pickles, from a copy of the folder.
    m3_dir = os.path.join(tmp, name + "-m3")
    shutil.copytree(folder, m3_dir)
    torch.save(sparse, os.path.join(m3_dir, "sparse_linear.pt"))
    torch.save(colbert, os.path.join(m3_dir, "colbert_linear.pt"))

    st = SentenceTransformer(folder, device="cpu")
    ids = unpadded_ids(st.preprocess(TEXTS))
    check_tokenizer_json(folder, TEXTS, ids, st.max_seq_length)
    emb = st.encode(TEXTS, convert_to_numpy=True)
    m3 = m3_embedder()(m3_dir, use_fp16=False, devices="cpu", normalize_embeddings=True, pooling_method="cls")
    got = m3.encode(TEXTS, batch_size=4, max_length=st.max_seq_length, return_dense=True, return_sparse=True,
                    return_colbert_vecs=False)
    if not np.allclose(got["dense_vecs"], emb, atol=1e-5):
        raise SystemExit(f"{name}: FlagEmbedding's dense vectors differ from sentence-transformers'")
    m3_ids = [m3.tokenizer(t, truncation=True, max_length=st.max_seq_length)["input_ids"] for t in TEXTS]
    if m3_ids != ids:
        raise SystemExit(f"{name}: FlagEmbedding tokenized differently")
    special = sorted({tok.cls_token_id, tok.eos_token_id, tok.pad_token_id, tok.unk_token_id})
    vectors = []
    for lw in got["lexical_weights"]:
        pairs = sorted((int(k), float(v)) for k, v in lw.items())
        vectors.append({"indices": [k for k, _ in pairs], "values": [v for _, v in pairs]})
    nnz = [len(v["indices"]) for v in vectors]
    # Some texts keep nothing (an empty text; Chinese, all <unk> here; "a", one token of negative weight).
    if sum(n > 0 for n in nnz) < len(nnz) - 4 or any(i in special for v in vectors for i in v["indices"]):
        raise SystemExit(f"{name}: lexical weights {nnz} (special ids {special})")
    print(f"{name}: max_seq_length={st.max_seq_length} non-zeros per text={nnz}")
    ref = {
        "name": name,
        "family": model.config.model_type,
        "layout": "st5",
        "kind": "embedding+sparse",
        "versions": dict(versions(), FlagEmbedding=importlib_version("FlagEmbedding")),
        "max_seq_length": st.max_seq_length,
        "pooling": ["cls"],
        "normalize": True,
        "sparse_rule": "per token relu(sparse_linear(h)); per token id the max over the text; ids of the cls, eos, "
        "pad and unk tokens dropped; zeros dropped (FlagEmbedding M3Embedder._process_token_weights)",
        "special_ids_dropped": special,
        "weights": safetensors_index(os.path.join(folder, "model.safetensors")),
        "sparse_linear": safetensors_index(os.path.join(folder, "sparse_linear.safetensors")),
        "texts": TEXTS,
        "input_ids": ids,
        "embeddings": f32list(emb),
        "nnz": nnz,
        "sparse": vectors,
    }
    write_json(os.path.join(out, "references", name + ".json"), ref)


def importlib_version(dist):
    from importlib.metadata import version

    return version(dist)


NAMES = ["qwen2-embed", "mistral-embed", "nomic-mean", "gte-cls", "bge-m3"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output folder, e.g. tests/data/hf")
    ap.add_argument("--only", nargs="*", default=None, choices=NAMES, help="make only these names")
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(os.path.join(out, "references"), exist_ok=True)
    torch.manual_seed(0)
    np.random.seed(0)
    makers = {"qwen2-embed": make_qwen2, "mistral-embed": make_mistral, "nomic-mean": make_nomic, "gte-cls": make_gte,
              "bge-m3": make_bge_m3}
    with tempfile.TemporaryDirectory() as tmp:
        for n in NAMES:
            if args.only is None or n in args.only:
                makers[n](out, tmp)


if __name__ == "__main__":
    main()
