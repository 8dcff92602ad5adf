//! The importer without a runtime: what it reads from a folder, the errors
//! it gives for bad folders (each naming the file and the field or
//! tensor), and the MPNet relative-position buckets against the table
//! transformers computed (`tests/data/hf/references/mpnet_buckets.json`).

use std::path::{Path, PathBuf};

use trt_hf::st::{Module, PoolingMode, SentenceConfig};
use trt_hf::weights::Weights;
use trt_hf::{import, Error, HfFolder, ImportOptions, ModelTask, ScoreActivation};

#[path = "common/dirs.rs"]
mod dirs;
use dirs::copy_dir;

fn fixtures() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/hf"))
}

/// A copy of fixture `name` in a temporary folder, to break.
fn copy(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixtures().join(name), dir.path());
    dir
}

fn import_err(dir: &Path) -> Error {
    let out = tempfile::tempdir().unwrap();
    import(dir, out.path(), &ImportOptions::default()).expect_err("the import should fail")
}

fn edit_json(path: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

#[test]
fn mpnet_buckets_equal_transformers_table() {
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("references/mpnet_buckets.json")).unwrap()).unwrap();
    let table = r["buckets"].as_array().unwrap();
    assert_eq!(table.len(), 128);
    for (i, row) in table.iter().enumerate() {
        for (j, b) in row.as_array().unwrap().iter().enumerate() {
            let got = trt_hf::family::mpnet::relative_position_bucket(j as i64 - i as i64);
            assert_eq!(got, b.as_i64().unwrap(), "bucket of position pair ({i}, {j})");
        }
    }
}

#[test]
fn both_sentence_transformers_layouts_are_read() {
    // The hub's flags, sentence_bert_config.json's length.
    let hub = HfFolder::open(&fixtures().join("bert-hub")).unwrap();
    assert!(matches!(hub.sentence.modules.as_slice(), [Module::Pooling { modes, .. }, Module::Normalize] if modes == &[PoolingMode::Mean]));
    assert_eq!(hub.max_seq_length(), 20);
    // sentence-transformers 5+: "pooling_mode", a list in its own order, the length in tokenizer_config.json.
    let multi = SentenceConfig::read(&fixtures().join("bert-multi")).unwrap();
    let (modes, _) = multi.pooling().unwrap();
    assert_eq!(modes, &[PoolingMode::MeanSqrtLen, PoolingMode::LastToken, PoolingMode::Max]);
    let st5 = HfFolder::open(&fixtures().join("bert-st5")).unwrap();
    assert_eq!(st5.max_seq_length(), 24);
    assert_eq!(st5.sentence.default_prompt_name.as_deref(), Some("query"));
    assert!(
        matches!(st5.sentence.modules.as_slice(), [Module::Pooling { .. }, Module::Dense(d), Module::Normalize] if d.out_features == 16)
    );
    // A cross-encoder of sentence-transformers 6 (modules.json with a Transformer alone) classifies, with a sigmoid.
    let ce = HfFolder::open(&fixtures().join("roberta-cross-encoder")).unwrap();
    assert_eq!((ce.task(), ce.activation()), (ModelTask::Classification, ScoreActivation::Sigmoid));
    let multi_label = HfFolder::open(&fixtures().join("distilbert-multilabel")).unwrap();
    assert_eq!(multi_label.activation(), ScoreActivation::Sigmoid);
    assert_eq!(HfFolder::open(&fixtures().join("bert-cls3")).unwrap().activation(), ScoreActivation::Softmax);
    // RoBERTa-style positions start after the padding index: 66 rows, 64 usable.
    let roberta = HfFolder::open(&fixtures().join("roberta-max")).unwrap();
    assert_eq!(roberta.arch.position_limit(), 64);
}

#[test]
fn an_unknown_model_type_is_named_with_the_supported_ones() {
    let dir = copy("bert-hub");
    edit_json(&dir.path().join("config.json"), |v| v["model_type"] = "gpt2".into());
    let e = import_err(dir.path()).to_string();
    assert!(e.contains("model_type 'gpt2'") && e.contains("config.json") && e.contains("xlm-roberta") && e.contains("mpnet"), "{e}");
}

#[test]
fn a_config_field_of_the_wrong_type_is_named() {
    let dir = copy("bert-hub");
    edit_json(&dir.path().join("config.json"), |v| v["hidden_size"] = "big".into());
    let e = import_err(dir.path());
    assert!(matches!(&e, Error::Config { field, .. } if field == "hidden_size"), "{e}");
    assert!(e.to_string().contains("\"big\""), "{e}");

    let dir = copy("bert-hub");
    edit_json(&dir.path().join("1_Pooling/config.json"), |v| v["pooling_mode_mean_tokens"] = 3.into());
    let e = import_err(dir.path());
    assert!(
        matches!(&e, Error::Config { field, path, .. } if field == "pooling_mode_mean_tokens" && path.ends_with("1_Pooling/config.json")),
        "{e}"
    );

    let dir = copy("bert-st5");
    edit_json(&dir.path().join("1_Pooling/config.json"), |v| v["pooling_mode"] = "median".into());
    let e = import_err(dir.path()).to_string();
    assert!(e.contains("pooling_mode 'median'") && e.contains("weightedmean"), "{e}");

    let dir = copy("bert-hub");
    std::fs::write(dir.path().join("config.json"), "{ not json").unwrap();
    assert!(matches!(import_err(dir.path()), Error::Config { field, .. } if field == "(file)"));
}

#[test]
fn weights_that_do_not_fit_the_config_name_the_tensor() {
    // The config says 3 layers; the checkpoint has 2.
    let dir = copy("bert-hub");
    edit_json(&dir.path().join("config.json"), |v| v["num_hidden_layers"] = 3.into());
    let e = import_err(dir.path());
    assert!(matches!(&e, Error::MissingTensor { tensor, .. } if tensor.starts_with("encoder.layer.2.")), "{e}");

    // A wider hidden size than the tensors have.
    let dir = copy("bert-hub");
    edit_json(&dir.path().join("config.json"), |v| v["hidden_size"] = 64.into());
    let e = import_err(dir.path());
    assert!(
        matches!(&e, Error::Tensor { tensor, problem, .. } if tensor == "embeddings.word_embeddings.weight" && problem.contains("shape")),
        "{e}"
    );
}

#[test]
fn a_truncated_or_lying_safetensors_file_is_refused() {
    let dir = copy("bert-hub");
    let path = dir.path().join("model.safetensors");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    assert!(matches!(import_err(dir.path()), Error::Safetensors { .. }));

    // A header that claims more data than the file holds.
    let header = br#"{"embeddings.word_embeddings.weight":{"dtype":"F32","shape":[1000000,32],"data_offsets":[0,128000000]}}"#;
    let mut lying = (header.len() as u64).to_le_bytes().to_vec();
    lying.extend_from_slice(header);
    lying.extend_from_slice(&[0u8; 64]);
    std::fs::write(&path, &lying).unwrap();
    let e = import_err(dir.path());
    assert!(matches!(&e, Error::Safetensors { path, .. } if path.ends_with("model.safetensors")), "{e}");

    // A header length past the file.
    std::fs::write(&path, u64::MAX.to_le_bytes()).unwrap();
    assert!(matches!(import_err(dir.path()), Error::Safetensors { .. }));

    // Integer weights where floats are needed.
    let header = br#"{"embeddings.word_embeddings.weight":{"dtype":"I64","shape":[2,2],"data_offsets":[0,32]}}"#;
    let mut ints = (header.len() as u64).to_le_bytes().to_vec();
    ints.extend_from_slice(header);
    ints.extend_from_slice(&[0u8; 32]);
    let w = Weights::from_shards(path.clone(), vec![(PathBuf::from("model.safetensors"), ints)]).unwrap();
    let e = w.get("embeddings.word_embeddings.weight", &[2, 2]).unwrap_err();
    assert!(e.to_string().contains("F32, F16 or BF16"), "{e}");
}

#[test]
fn missing_files_are_named() {
    let dir = copy("bert-hub");
    std::fs::remove_file(dir.path().join("tokenizer.json")).unwrap();
    assert!(matches!(import_err(dir.path()), Error::Missing { path, .. } if path.ends_with("tokenizer.json")));

    let dir = copy("bert-hub");
    std::fs::remove_file(dir.path().join("model.safetensors")).unwrap();
    std::fs::write(dir.path().join("pytorch_model.bin"), b"pickle").unwrap();
    let e = import_err(dir.path()).to_string();
    assert!(e.contains("pytorch_model.bin") && e.contains("model.safetensors"), "{e}");

    // A module folder outside the model folder is refused, not read.
    let dir = copy("bert-hub");
    edit_json(&dir.path().join("modules.json"), |v| v[1]["path"] = "../../etc".into());
    assert!(matches!(import_err(dir.path()), Error::Config { field, .. } if field == "[1].path"));
}

#[test]
fn sharded_and_half_precision_checkpoints_import_to_the_same_graph() {
    // The same tensors split over two shards and an index, and stored as F16.
    let dir = copy("bert-hub");
    let bytes = std::fs::read(dir.path().join("model.safetensors")).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let data = &bytes[8 + n..];
    // (name, shape, F16 bytes) of each tensor, by shard.
    type Shard = Vec<(String, Vec<usize>, Vec<u8>)>;
    let mut shards: [Shard; 2] = [Vec::new(), Vec::new()];
    for (i, (name, info)) in header.iter().filter(|(k, _)| *k != "__metadata__").enumerate() {
        let [start, end] = [0, 1].map(|k| info["data_offsets"][k].as_u64().unwrap() as usize);
        let shape: Vec<usize> = info["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap() as usize).collect();
        let f16: Vec<u8> = data[start..end]
            .chunks_exact(4)
            .flat_map(|c| half::f16::from_f32(f32::from_le_bytes(c.try_into().unwrap())).to_le_bytes())
            .collect();
        shards[i % 2].push((name.clone(), shape, f16));
    }
    let mut weight_map = serde_json::Map::new();
    for (s, tensors) in shards.iter().enumerate() {
        let file = format!("model-0000{}-of-00002.safetensors", s + 1);
        let mut header = serde_json::Map::new();
        let mut offset = 0;
        for (name, shape, bytes) in tensors {
            header
                .insert(name.clone(), serde_json::json!({"dtype": "F16", "shape": shape, "data_offsets": [offset, offset + bytes.len()]}));
            offset += bytes.len();
            weight_map.insert(name.clone(), file.clone().into());
        }
        let h = serde_json::to_vec(&header).unwrap();
        let mut out = (h.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(&h);
        for (_, _, bytes) in tensors {
            out.extend_from_slice(bytes);
        }
        std::fs::write(dir.path().join(&file), out).unwrap();
    }
    std::fs::remove_file(dir.path().join("model.safetensors")).unwrap();
    std::fs::write(dir.path().join("model.safetensors.index.json"), serde_json::json!({"weight_map": weight_map}).to_string()).unwrap();
    let out = tempfile::tempdir().unwrap();
    let d = import(dir.path(), out.path(), &ImportOptions::default()).unwrap();
    assert_eq!(d.embedding_dim, Some(32));
    assert!(out.path().join("model.onnx").is_file());
}

#[test]
fn the_hub_cache_layout_resolves_offline() {
    let cache = tempfile::tempdir().unwrap();
    let repo = cache.path().join("models--org--tiny-bert");
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), "0123abcd\n").unwrap();
    copy_dir(&fixtures().join("bert-hub"), &repo.join("snapshots/0123abcd"));
    let dir = trt_hf::hub::resolve_in(cache.path(), "org/tiny-bert").unwrap();
    assert!(dir.ends_with("snapshots/0123abcd"));
    assert!(HfFolder::open(&dir).is_ok());
    let e = trt_hf::hub::resolve_in(cache.path(), "org/absent").unwrap_err().to_string();
    assert!(e.contains("models--org--absent") && e.contains("not made"), "{e}");
    assert!(trt_hf::hub::resolve_in(cache.path(), "../etc").is_err());
}

#[test]
fn do_lower_case_puts_a_lowercase_normalizer_before_the_tokenizer() {
    // The XLM-R fixture has no normalizer: with do_lower_case, "Hello WORLD" must tokenize as "hello world".
    let dir = copy("xlmr-weighted");
    edit_json(&dir.path().join("sentence_bert_config.json"), |v| v["do_lower_case"] = true.into());
    let out = tempfile::tempdir().unwrap();
    import(dir.path(), out.path(), &ImportOptions::default()).unwrap();
    let t: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.path().join("tokenizer.json")).unwrap()).unwrap();
    assert_eq!(t["normalizer"]["type"], "Lowercase");
}

/// `config.json` of a copy of `name` edited by `edit`, and the import's error.
fn config_err(name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let dir = copy(name);
    edit_json(&dir.path().join("config.json"), edit);
    import_err(dir.path()).to_string()
}

/// An edit of a `config.json`.
type Edit = fn(&mut serde_json::Value);

#[test]
fn rotary_settings_the_graph_does_not_compute_are_refused_by_name() {
    let cases: [(Edit, &str); 6] = [
        (|c| c["use_sliding_window"] = true.into(), "use_sliding_window true"),
        (|c| c["rope_parameters"]["rope_type"] = "yarn".into(), "rope_parameters.rope_type 'yarn'"),
        (|c| c["rope_scaling"] = serde_json::json!({"type": "linear", "factor": 2.0}), "rope_scaling.rope_type 'linear'"),
        (|c| c["attention_bias"] = true.into(), "attention_bias true"),
        (|c| c["layer_types"][1] = "sliding_attention".into(), "layer_types entry 'sliding_attention'"),
        (|c| c["num_key_value_heads"] = 3.into(), "num_key_value_heads"),
    ];
    for (edit, what) in cases {
        let err = config_err("qwen3-embed", edit);
        assert!(err.contains("config.json") && err.contains(what), "{what}: {err}");
    }
}

#[test]
fn qwen3_reads_both_config_forms_and_the_pad_token() {
    // Hub configs keep rope_theta at the top level.
    let dir = copy("qwen3-embed");
    edit_json(&dir.path().join("config.json"), |c| {
        c.as_object_mut().unwrap().remove("rope_parameters");
        c["rope_theta"] = 1000000.0.into();
    });
    let f = HfFolder::open(dir.path()).unwrap();
    let rot = f.arch.rotary.clone().unwrap();
    assert_eq!((rot.theta, rot.causal, f.arch.kv_heads, f.arch.head_dim()), (1e6, true, 2, 8));
    assert_eq!(f.max_seq_length(), 64, "tokenizer_config.json's model_max_length");
    // The pad token of tokenizer_config.json becomes the written tokenizer's padding.
    let out = tempfile::tempdir().unwrap();
    import(dir.path(), out.path(), &ImportOptions::default()).unwrap();
    let t: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.path().join("tokenizer.json")).unwrap()).unwrap();
    assert_eq!((t["padding"]["pad_id"].as_u64(), t["padding"]["pad_token"].as_str()), (Some(475), Some("<|endoftext|>")));
}

#[test]
fn modernbert_hub_config_fields_read_as_transformers_5_writes_them() {
    let written = HfFolder::open(&fixtures().join("modernbert-mean")).unwrap().arch.rotary.unwrap();
    assert_eq!((written.sliding.as_slice(), written.window, written.causal), (&[false, true, false][..], 4, false));
    assert_eq!((written.theta, written.local_theta), (160000.0, 10000.0));
    // Hub ModernBERTs: global_attn_every_n_layers and global/local_rope_theta only.
    let dir = copy("modernbert-mean");
    edit_json(&dir.path().join("config.json"), |c| {
        let o = c.as_object_mut().unwrap();
        o.remove("layer_types");
        o.remove("rope_parameters");
        o.insert("global_rope_theta".into(), 160000.0.into());
        o.insert("local_rope_theta".into(), 10000.0.into());
    });
    assert_eq!(HfFolder::open(dir.path()).unwrap().arch.rotary.unwrap(), written);
    let err = config_err("modernbert-mean", |c| c["norm_bias"] = true.into());
    assert!(err.contains("norm_bias true"), "{err}");
    // A classifier (no sentence-transformers modules) needs a head the importer does not write.
    let dir = copy("modernbert-mean");
    std::fs::remove_file(dir.path().join("modules.json")).unwrap();
    edit_json(&dir.path().join("config.json"), |c| c["architectures"][0] = "ModernBertForSequenceClassification".into());
    let err = import_err(dir.path()).to_string();
    assert!(err.contains("sequence-classification head of ModernBERT"), "{err}");
}

#[test]
fn splade_folders_are_read_and_what_they_cannot_be_is_refused() {
    let f = HfFolder::open(&fixtures().join("splade")).unwrap();
    assert_eq!(f.task(), ModelTask::SparseEmbedding);
    assert_eq!(f.sentence.splade(), Some(trt_hf::st::Splade { max: true, log1p_twice: false }));
    let dir = copy("splade");
    edit_json(&dir.path().join("1_SpladePooling/config.json"), |c| c["pooling_strategy"] = "mean".into());
    let err = import_err(dir.path()).to_string();
    assert!(err.contains("1_SpladePooling/config.json") && err.contains("pooling_strategy 'mean'"), "{err}");
    // A masked-LM Transformer alone is not a model this importer knows how to use.
    let dir = copy("splade");
    edit_json(&dir.path().join("modules.json"), |m| m.as_array_mut().unwrap().truncate(1));
    let err = import_err(dir.path()).to_string();
    assert!(err.contains("without SpladePooling"), "{err}");
}

/// The operator types of `dir/model.onnx`, counted.
fn op_counts(dir: &Path) -> std::collections::BTreeMap<String, usize> {
    let model = trt_onnx::graph::Model::load(dir.join("model.onnx")).unwrap();
    let mut counts = std::collections::BTreeMap::new();
    for n in &model.graph().node {
        *counts.entry(n.op_type.clone().unwrap_or_default()).or_insert(0) += 1;
    }
    counts
}

/// The packed form's layout (its operators run on ONNX Runtime's CUDA
/// provider only, so its numbers are checked on the GPU host by nlp_hf's
/// CUDA test): one RemovePadding after the embeddings, a PackedAttention in
/// every layer in place of Attention (MPNet's relative-position bias as its
/// sixth input), one RestorePadding before the heads. NomicBERT and GTE
/// rotate Q and K at each packed token's position and attend with one
/// PackedMultiHeadAttention a layer; ModernBERT (its sliding layers' band)
/// and the decoders (GroupQueryAttention) are written in their fused form.
#[test]
fn the_packed_form_runs_every_layer_on_the_real_tokens() {
    for (name, layers) in [("bert-hub", 2), ("mpnet-mean", 2)] {
        let out = tempfile::tempdir().unwrap();
        let options = ImportOptions::default().with_form(trt_hf::Form::Packed);
        let d = import(&fixtures().join(name), out.path(), &options).unwrap();
        assert_eq!(d.form, trt_hf::Form::Packed);
        let ops = op_counts(out.path());
        let count = |op: &str| ops.get(op).copied().unwrap_or(0);
        assert_eq!((count("RemovePadding"), count("RestorePadding")), (1, 1), "{name}: {ops:?}");
        assert_eq!((count("PackedAttention"), count("Attention")), (layers, 0), "{name}: {ops:?}");
        let model = trt_onnx::graph::Model::load(out.path().join("model.onnx")).unwrap();
        let attention: Vec<_> = model.graph().node.iter().filter(|n| n.op_type.as_deref() == Some("PackedAttention")).collect();
        let with_bias = attention.iter().all(|n| n.input.len() == 6);
        assert_eq!(with_bias, name.starts_with("mpnet"), "{name}: the relative-position bias goes to every layer");
    }
    let out = tempfile::tempdir().unwrap();
    let d = import(&fixtures().join("modernbert-mean"), out.path(), &ImportOptions::default().with_form(trt_hf::Form::Packed)).unwrap();
    assert_eq!(d.form, trt_hf::Form::Fused, "ModernBERT is written fused");
    assert_eq!(op_counts(out.path()).get("RemovePadding"), None);
    for name in ["nomic-mean", "gte-cls"] {
        let out = tempfile::tempdir().unwrap();
        let d = import(&fixtures().join(name), out.path(), &ImportOptions::default().with_form(trt_hf::Form::Packed)).unwrap();
        assert_eq!(d.form, trt_hf::Form::Packed, "{name}");
        let ops = op_counts(out.path());
        let count = |op: &str| ops.get(op).copied().unwrap_or(0);
        assert_eq!((count("RemovePadding"), count("RestorePadding")), (1, 1), "{name}: {ops:?}");
        assert_eq!(
            (count("PackedMultiHeadAttention"), count("MultiHeadAttention"), count("RotaryEmbedding")),
            (2, 0, 4),
            "{name}: {ops:?}"
        );
    }
}

/// The rotary families' fused form: the encoders rotate Q and K with two
/// RotaryEmbedding nodes and attend with one MultiHeadAttention a layer
/// (ModernBERT's sliding layers with their band as its bias), adding and
/// normalising in SkipLayerNormalization; the decoders attend with one
/// GroupQueryAttention a layer (rotation, causality and window inside) and
/// add and normalise in SkipSimplifiedLayerNormalization. A decoder whose
/// heads GroupQueryAttention cannot take (a size that is not a multiple of
/// 16, the small Qwen fixtures') is written plain. The numbers against the
/// libraries: nlp_hf.
#[test]
fn rotary_families_have_a_fused_form() {
    // (fixture, layers, skip norms, form written)
    for (name, layers, skips, form) in [
        ("modernbert-mean", 3, 6, trt_hf::Form::Fused),
        ("nomic-mean", 2, 4, trt_hf::Form::Fused),
        ("gte-cls", 2, 4, trt_hf::Form::Fused),
        ("mistral-embed", 2, 4, trt_hf::Form::Fused),
        ("qwen3-embed", 2, 0, trt_hf::Form::Plain),
    ] {
        let out = tempfile::tempdir().unwrap();
        let d = import(&fixtures().join(name), out.path(), &ImportOptions::default().with_form(trt_hf::Form::Fused)).unwrap();
        assert_eq!(d.form, form, "{name}");
        let ops = op_counts(out.path());
        let count = |op: &str| ops.get(op).copied().unwrap_or(0);
        let (attention, skip) = if name.contains("mistral") {
            (count("GroupQueryAttention"), count("SkipSimplifiedLayerNormalization"))
        } else {
            (count("MultiHeadAttention"), count("SkipLayerNormalization"))
        };
        if form == trt_hf::Form::Plain {
            assert!(ops.keys().all(|op| !op.contains("Attention") && !op.starts_with("Skip")), "{name}: {ops:?}");
            continue;
        }
        assert_eq!((attention, skip, count("Softmax")), (layers, skips, 0), "{name}: {ops:?}");
        let rotations = if name.contains("mistral") { 0 } else { 2 * layers };
        assert_eq!(count("RotaryEmbedding"), rotations, "{name}: {ops:?}");
    }
}

/// MPNet's packed form pads its sequence to a multiple of 8 before
/// RemovePadding (the length at which ONNX Runtime's CUDA provider runs a
/// biased PackedAttention in its memory-efficient kernel) and slices the
/// padding off after RestorePadding; its fused form pads nothing (shape
/// arithmetic would put nodes on the CPU and keep CUDA graphs from capturing
/// it), and neither does BERT's packed form, whose attention has no bias.
/// The numbers: the packed fixtures on the GPU host (nlp_hf's CUDA test).
#[test]
fn mpnet_packed_form_aligns_its_sequence_and_the_fused_form_does_not() {
    for (name, form, pads) in
        [("mpnet-mean", trt_hf::Form::Packed, 1), ("mpnet-mean", trt_hf::Form::Fused, 0), ("bert-hub", trt_hf::Form::Packed, 0)]
    {
        let out = tempfile::tempdir().unwrap();
        import(&fixtures().join(name), out.path(), &ImportOptions::default().with_form(form)).unwrap();
        let ops = op_counts(out.path());
        assert_eq!(ops.get("Pad").copied().unwrap_or(0), pads, "{name} {form:?}: {ops:?}");
        let model = trt_onnx::graph::Model::load(out.path().join("model.onnx")).unwrap();
        let padded = model.graph().node.iter().find(|n| n.op_type.as_deref() == Some("Pad"));
        if let Some(pad) = padded {
            // The embeddings are padded, the RemovePadding after them takes the padded state.
            let remove = model.graph().node.iter().find(|n| n.op_type.as_deref() == Some("RemovePadding")).unwrap();
            assert_eq!(remove.input[0], pad.output[0], "{name}: {:?}", remove.input);
        }
    }
}

/// Every attention node of the FP16 packed form computes in FP16, the first
/// layer's too, whose input comes from the embeddings' FP32 LayerNorm through
/// RemovePadding (kept FP32, it ran ONNX Runtime's unfused FP32 kernel).
#[test]
fn the_packed_form_converts_every_attention_to_fp16() {
    for name in ["bert-hub", "mpnet-mean"] {
        let out = tempfile::tempdir().unwrap();
        import(&fixtures().join(name), out.path(), &ImportOptions::default().with_form(trt_hf::Form::Packed)).unwrap();
        let model = trt_onnx::graph::Model::load(out.path().join("model.onnx")).unwrap();
        let (_, report) = trt_onnx::fp16::convert(&model, &trt_onnx::fp16::Fp16Options::default()).unwrap();
        let fp32: Vec<_> = report.fp32_nodes.iter().filter(|(op, _)| op.contains("Attention")).collect();
        assert!(fp32.is_empty(), "{name}: attention kept FP32: {fp32:?}");
    }
}

#[test]
fn decoder_sliding_windows_read_from_either_config_form() {
    // As transformers 5 writes them: layer_types; the window less one is the farthest key seen.
    let qwen2 = HfFolder::open(&fixtures().join("qwen2-embed")).unwrap().arch;
    let rot = qwen2.rotary.clone().unwrap();
    assert_eq!((rot.sliding.as_slice(), rot.window, rot.causal, qwen2.kv_heads), (&[false, true][..], 7, true, 2));
    // gte-Qwen2's hub config: use_sliding_window and max_window_layers, no layer_types.
    let dir = copy("qwen2-embed");
    edit_json(&dir.path().join("config.json"), |c| {
        let o = c.as_object_mut().unwrap();
        o.remove("layer_types");
        o.remove("rope_parameters");
        o.insert("rope_theta".into(), 1000000.0.into());
    });
    assert_eq!(HfFolder::open(dir.path()).unwrap().arch.rotary.unwrap(), rot);
    // use_sliding_window false: no layer slides, whatever sliding_window says (gte-Qwen2-7B-instruct's).
    let dir = copy("qwen2-embed");
    edit_json(&dir.path().join("config.json"), |c| {
        let o = c.as_object_mut().unwrap();
        o.remove("layer_types");
        o.insert("use_sliding_window".into(), false.into());
        o.insert("sliding_window".into(), 131072.into());
    });
    assert_eq!(HfFolder::open(dir.path()).unwrap().arch.rotary.unwrap().sliding, vec![false, false]);
    let err = config_err("qwen2-embed", |c| c["use_sliding_window"] = false.into());
    assert!(err.contains("layer_types") && err.contains("use_sliding_window true"), "{err}");

    // Mistral: every layer slides; an absent sliding_window is transformers' 4096, null none.
    let mistral = HfFolder::open(&fixtures().join("mistral-embed")).unwrap().arch;
    let rot = mistral.rotary.clone().unwrap();
    assert_eq!((rot.sliding.as_slice(), rot.window, mistral.kv_heads, mistral.head_dim()), (&[true, true][..], 7, 1, 16));
    let dir = copy("mistral-embed");
    edit_json(&dir.path().join("config.json"), |c| _ = c.as_object_mut().unwrap().remove("sliding_window"));
    assert_eq!(HfFolder::open(dir.path()).unwrap().arch.rotary.unwrap().window, 4095);
    let dir = copy("mistral-embed");
    edit_json(&dir.path().join("config.json"), |c| c["sliding_window"] = serde_json::Value::Null);
    assert_eq!(HfFolder::open(dir.path()).unwrap().arch.rotary.unwrap().sliding, vec![false, false]);
    let cases: [(&str, Edit, &str); 3] = [
        ("mistral-embed", |c| c["rope_scaling"] = serde_json::json!({"rope_type": "yarn", "factor": 4.0}), "rope_scaling.rope_type 'yarn'"),
        ("mistral-embed", |c| c["sliding_window"] = 0.into(), "sliding_window"),
        ("qwen2-embed", |c| c["rope_parameters"]["rope_type"] = "dynamic".into(), "rope_parameters.rope_type 'dynamic'"),
    ];
    for (name, edit, what) in cases {
        let err = config_err(name, edit);
        assert!(err.contains("config.json") && err.contains(what), "{name} {what}: {err}");
    }
}

#[test]
fn nomic_hub_config_fields_read_as_transformers_writes_them() {
    let written = HfFolder::open(&fixtures().join("nomic-mean")).unwrap().arch;
    assert_eq!(
        (written.rotary.as_ref().unwrap().theta, written.type_vocab_size, written.rotary.as_ref().unwrap().causal),
        (1000.0, 2, false)
    );
    // nomic-embed-text-v1.5's config.json names the same model with GPT-2's field names and remote-code switches.
    let dir = copy("nomic-mean");
    edit_json(&dir.path().join("config.json"), |c| {
        let o = c.as_object_mut().unwrap();
        for (native, hub) in [
            ("hidden_size", "n_embd"),
            ("num_attention_heads", "n_head"),
            ("num_hidden_layers", "n_layer"),
            ("intermediate_size", "n_inner"),
            ("max_position_embeddings", "n_positions"),
            ("layer_norm_eps", "layer_norm_epsilon"),
        ] {
            let v = o.remove(native).unwrap();
            o.insert(hub.into(), v);
        }
        o.remove("hidden_act");
        o.remove("rope_parameters");
        let hub = serde_json::json!({
            "activation_function": "swiglu", "rotary_emb_base": 1000, "rotary_emb_fraction": 1.0,
            "rotary_emb_interleaved": false, "rotary_scaling_factor": null, "rotary_emb_scale_base": null,
            "qkv_proj_bias": false, "mlp_fc1_bias": false, "mlp_fc2_bias": false, "prenorm": false,
            "parallel_block": false, "use_rms_norm": false, "causal": false,
            "auto_map": {"AutoModel": "nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertModel"},
        });
        o.extend(hub.as_object().unwrap().clone());
    });
    let hub = HfFolder::open(dir.path()).unwrap().arch;
    assert_eq!(
        (hub.hidden, hub.heads, hub.layers, hub.intermediate, hub.max_positions, hub.layer_norm_eps, hub.act, &hub.rotary),
        (
            written.hidden,
            written.heads,
            written.layers,
            written.intermediate,
            written.max_positions,
            written.layer_norm_eps,
            written.act,
            &written.rotary
        )
    );
    let out = tempfile::tempdir().unwrap();
    import(dir.path(), out.path(), &ImportOptions::default()).unwrap();
    // What the graph does not compute is refused by name.
    let cases: [(&str, Edit, &str); 8] = [
        ("nomic-mean", |c| c["rotary_emb_fraction"] = 0.5.into(), "rotary_emb_fraction 0.5"),
        ("nomic-mean", |c| c["prenorm"] = true.into(), "prenorm true"),
        ("nomic-mean", |c| c["qkv_proj_bias"] = true.into(), "qkv_proj_bias true"),
        ("nomic-mean", |c| c["rotary_scaling_factor"] = 2.0.into(), "rotary_scaling_factor 2.0"),
        ("nomic-mean", |c| c["rotary_emb_interleaved"] = true.into(), "rotary_emb_interleaved true"),
        ("gte-cls", |c| c["rope_scaling"] = serde_json::json!({"type": "ntk", "factor": 2.0}), "rope_scaling.rope_type 'ntk'"),
        ("gte-cls", |c| c["pack_qkv"] = false.into(), "pack_qkv false"),
        ("gte-cls", |c| c["logn_attention_scale"] = true.into(), "logn_attention_scale true"),
    ];
    for (name, edit, what) in cases {
        let err = config_err(name, edit);
        assert!(err.contains("config.json") && err.contains(what), "{name} {what}: {err}");
    }
    // Alibaba-NLP's remote-code GTE calls itself `new`: the same family.
    let dir = copy("gte-cls");
    edit_json(&dir.path().join("config.json"), |c| c["model_type"] = "new".into());
    assert_eq!(HfFolder::open(dir.path()).unwrap().arch.family, trt_hf::Family::Gte);
}

#[test]
fn bge_m3_sparse_head_is_read_from_safetensors_and_its_pickle_refused_by_name() {
    let out = tempfile::tempdir().unwrap();
    let d = import(&fixtures().join("bge-m3"), out.path(), &ImportOptions::default()).unwrap();
    assert_eq!(
        (d.outputs.as_slice(), d.sparse_dim),
        (&["embedding".to_string(), "last_hidden_state".into(), "sparse".into()][..], Some(480))
    );
    assert!(d.text_model_config(8).contains("name: \"sparse\" data_type: TYPE_FP32 dims: [ 480 ]"), "{}", d.text_model_config(8));
    // The hub's folder ships the head as a torch pickle only.
    let dir = copy("bge-m3");
    std::fs::remove_file(dir.path().join("sparse_linear.safetensors")).unwrap();
    std::fs::write(dir.path().join("sparse_linear.pt"), b"PK\x03\x04 not read").unwrap();
    let err = import_err(dir.path()).to_string();
    assert!(err.contains("sparse_linear.pt") && err.contains("sparse_linear.safetensors"), "{err}");
    // A head of another shape is named by file and tensor.
    let dir = copy("bge-m3");
    std::fs::copy(fixtures().join("bge-m3/model.safetensors"), dir.path().join("sparse_linear.safetensors")).unwrap();
    let err = import_err(dir.path()).to_string();
    assert!(err.contains("sparse_linear.safetensors") && err.contains("'weight'"), "{err}");
}
