//! config.pbtxt: Triton's fields typed, unknown fields warned about, invalid
//! values failing with the field and line named.

use std::time::Duration;

use trt_nlp::HostWait;
use trt_serve::config::{DataType, InstanceGroup, InstanceKind, ModelConfig, Platform, TimeoutAction, VersionPolicy};
use trt_serve::test_support::placement::{place, GpuInstance, Placement};

const CLASSIFIER: &str = r#"
name: "minilm"
platform: "onnxruntime_onnx"
max_batch_size: 32
input [
  { name: "text" data_type: TYPE_STRING dims: [ 1 ] }
]
output [
  { name: "logits" data_type: TYPE_FP32 dims: [ 2 ] },
  { name: "embedding" data_type: TYPE_FP32 dims: [ 384 ] }
]
dynamic_batching {
  preferred_batch_size: [ 8, 16 ]
  max_queue_delay_microseconds: 2000
  priority_levels: 2
  default_priority_level: 2
  default_queue_policy { timeout_action: REJECT default_timeout_microseconds: 100000 allow_timeout_override: true max_queue_size: 64 }
}
instance_group [ { count: 2 kind: KIND_CPU }, { count: 1 } ]
version_policy: { latest: { num_versions: 2 } }
optimization { execution_accelerators { cpu_execution_accelerator: [ { name: "openvino" } ] } }
"#;

#[test]
fn triton_fields_are_typed() {
    let c = ModelConfig::parse(CLASSIFIER, "minilm").unwrap();
    assert_eq!(c.platform, Platform::OnnxRuntimeOnnx);
    assert_eq!(c.max_batch_size, 32);
    assert_eq!(c.inputs[0].name, "text");
    assert_eq!(c.inputs[0].data_type, DataType::Bytes);
    assert_eq!(c.inputs[0].dims, [1]);
    assert_eq!(c.outputs.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(), ["logits", "embedding"]);
    let db = c.dynamic_batching.as_ref().unwrap();
    assert_eq!(db.preferred_batch_size, [8, 16]);
    assert_eq!(db.max_queue_delay, Duration::from_micros(2000));
    assert_eq!((db.priority_levels, db.default_priority_level), (2, 2));
    let q = &db.default_queue_policy;
    assert_eq!(q.timeout_action, TimeoutAction::Reject);
    assert_eq!(q.default_timeout, Some(Duration::from_millis(100)));
    assert!(q.allow_timeout_override);
    assert_eq!(q.max_queue_size, 64);
    assert_eq!(c.instance_count, 3);
    assert_eq!(c.version_policy, VersionPolicy::Latest(2));
    // A group without a kind goes with the other's KIND_CPU.
    assert_eq!((c.instance_kind, c.gpus.as_slice()), (InstanceKind::Cpu, &[][..]));
    // Execution accelerators are not used by trt serve: warned, not fatal.
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    assert!(c.warnings.iter().any(|w| w.contains("line 21") && w.contains("'optimization.execution_accelerators'")), "{:?}", c.warnings);
    assert_eq!(c.cuda_graph_max_batch, 0, "no graphs unless asked for");
}

#[test]
fn cuda_graphs_cover_the_largest_graph_spec_batch_or_max_batch_size() {
    let with = |opt: &str| {
        CLASSIFIER.replace("optimization { execution_accelerators { cpu_execution_accelerator: [ { name: \"openvino\" } ] } }", opt)
    };
    let c = ModelConfig::parse(&with("optimization { cuda { graphs: true } }"), "minilm").unwrap();
    assert_eq!((c.cuda_graph_max_batch, c.warnings.len()), (32, 0), "{:?}", c.warnings);
    let spec = "optimization { cuda { graphs: true graph_spec [ { batch_size: 4 }, { batch_size: 8 } ] } }";
    assert_eq!(ModelConfig::parse(&with(spec), "minilm").unwrap().cuda_graph_max_batch, 8);
    assert_eq!(ModelConfig::parse(&with("optimization { cuda { graphs: false } }"), "minilm").unwrap().cuda_graph_max_batch, 0);
    let e = ModelConfig::parse(&with("optimization { cuda { graphs: true graph_spec { batch_size: 64 } } }"), "minilm").unwrap_err();
    assert!(e.to_string().contains("64 is larger than max_batch_size 32"), "{e}");
    let e = ModelConfig::parse(&with("optimization { cuda { graphs: 3 } }"), "minilm").unwrap_err();
    assert!(e.to_string().contains("optimization.cuda.graphs"), "{e}");
}

#[test]
fn a_gpu_instance_group_names_its_kind_and_devices() {
    let gpu = CLASSIFIER.replace("[ { count: 2 kind: KIND_CPU }, { count: 1 } ]", "[ { count: 4 kind: KIND_GPU gpus: [ 0 ] } ]");
    let c = ModelConfig::parse(&gpu, "minilm").unwrap();
    assert_eq!((c.instance_count, c.instance_kind, c.gpus.as_slice()), (4, InstanceKind::Gpu, &[0][..]));
    let none = CLASSIFIER.replace("instance_group [ { count: 2 kind: KIND_CPU }, { count: 1 } ]\n", "");
    let c = ModelConfig::parse(&none, "minilm").unwrap();
    assert_eq!((c.instance_count, c.instance_kind), (1, InstanceKind::Auto));
}

/// `CLASSIFIER` with this `instance_group`.
fn with_groups(groups: &str) -> ModelConfig {
    ModelConfig::parse(&CLASSIFIER.replace("[ { count: 2 kind: KIND_CPU }, { count: 1 } ]", groups), "minilm").unwrap()
}

fn gpu(gpu: u32, count: usize) -> GpuInstance {
    GpuInstance { gpu, count }
}

#[test]
fn gpu_groups_keep_their_gpus_and_place_count_instances_on_each() {
    let c = with_groups("[ { count: 2 kind: KIND_GPU gpus: [ 0, 1 ] }, { kind: KIND_GPU gpus: [ 1, 1 ] } ]");
    assert_eq!(
        c.instance_groups,
        [
            InstanceGroup { count: 2, kind: InstanceKind::Gpu, gpus: vec![0, 1] },
            InstanceGroup { count: 1, kind: InstanceKind::Gpu, gpus: vec![1, 1] }
        ]
    );
    assert_eq!(c.gpus, [0, 1], "each GPU once");
    let p = place(&c, Ok(2)).unwrap();
    assert_eq!(p, Placement::Gpus(vec![gpu(0, 2), gpu(1, 2), gpu(1, 1), gpu(1, 1)]));
    assert_eq!(p.instances(), 6);
    // A GPU listed twice is two device instances on it.
    let twice = place(&with_groups("[ { count: 2 kind: KIND_GPU gpus: [ 0, 0 ] } ]"), Ok(1)).unwrap();
    assert_eq!(twice, Placement::Gpus(vec![gpu(0, 2), gpu(0, 2)]));
}

#[test]
fn gpus_omitted_on_kind_gpu_means_every_visible_gpu() {
    let c = with_groups("[ { count: 3 kind: KIND_GPU } ]");
    assert!(c.gpus.is_empty());
    assert_eq!(place(&c, Ok(1)).unwrap(), Placement::Gpus(vec![gpu(0, 3)]));
    assert_eq!(place(&c, Ok(4)).unwrap(), Placement::Gpus((0..4).map(|g| gpu(g, 3)).collect()));
    // A group without a kind goes with the KIND_GPU one, on every GPU too.
    let mixed = with_groups("[ { count: 1 kind: KIND_GPU gpus: [ 1 ] }, { count: 2 } ]");
    assert_eq!(place(&mixed, Ok(2)).unwrap(), Placement::Gpus(vec![gpu(1, 1), gpu(0, 2), gpu(1, 2)]));
    // The config endpoints report the groups as written, the kind filled in.
    let reported = mixed.reported_instance_groups();
    assert_eq!(
        reported.iter().map(|g| (g.count, g.kind, g.gpus.clone())).collect::<Vec<_>>(),
        [(1, InstanceKind::Gpu, vec![1]), (2, InstanceKind::Gpu, vec![])]
    );
}

#[test]
fn cpu_and_auto_groups_are_not_placed_on_gpus() {
    let c = ModelConfig::parse(CLASSIFIER, "minilm").unwrap();
    assert_eq!(place(&c, Err("no driver".into())).unwrap(), Placement::Unplaced { instances: 3 });
    let auto = with_groups("[ { count: 2 gpus: [ 5 ] } ]");
    assert_eq!(place(&auto, Ok(0)).unwrap(), Placement::Unplaced { instances: 2 }, "KIND_AUTO: where the backend runs");
}

#[test]
fn a_gpu_index_past_the_last_gpu_is_a_load_error_naming_it() {
    let e = place(&with_groups("[ { count: 1 kind: KIND_GPU gpus: [ 1 ] } ]"), Ok(1)).unwrap_err();
    assert!(matches!(e, trt_serve::ServeError::InvalidArgument(_)), "{e:?}");
    assert!(e.to_string().contains("instance_group 0 lists GPU 1, but this machine has 1 GPU (GPU 0)"), "{e}");
    let e = place(&with_groups("[ { kind: KIND_GPU gpus: [ 0 ] }, { kind: KIND_GPU gpus: [ 1, 7 ] } ]"), Ok(4)).unwrap_err();
    assert!(e.to_string().contains("instance_group 1 lists GPU 7, but this machine has 4 GPUs (GPUs 0 to 3)"), "{e}");
    let e = place(&with_groups("[ { kind: KIND_GPU } ]"), Ok(0)).unwrap_err();
    assert!(e.to_string().contains("KIND_GPU, but the CUDA driver reports no GPU"), "{e}");
    let e = place(&with_groups("[ { kind: KIND_GPU } ]"), Err("libcuda.so.1 not found".into())).unwrap_err();
    assert!(e.to_string().contains("no GPU can be used here: libcuda.so.1 not found"), "{e}");
    let many = format!("[ {{ count: 256 kind: KIND_GPU gpus: [ {} ] }} ]", ["0"; 5].join(", "));
    let e = place(&with_groups(&many), Ok(1)).unwrap_err();
    assert!(e.to_string().contains("places 1280 instances; at most 1024"), "{e}");
}

#[test]
fn backend_names_the_platform_and_defaults_apply() {
    let c = ModelConfig::parse(
        "backend: \"tensorrt\"\ninput { name: \"text\" data_type: TYPE_STRING dims: 1 }\noutput { name: \"logits\" data_type: TYPE_FP32 dims: [2] }",
        "m",
    )
    .unwrap();
    assert_eq!(c.platform, Platform::TensorRtPlan);
    assert_eq!((c.name.as_str(), c.max_batch_size, c.instance_count), ("m", 0, 1));
    assert_eq!(c.version_policy, VersionPolicy::Latest(1));
    assert!(c.dynamic_batching.is_none() && c.warnings.is_empty());
}

/// The error for `CLASSIFIER` with `from` replaced by `to`.
fn error_for(from: &str, to: &str) -> String {
    assert!(CLASSIFIER.contains(from), "{from}");
    ModelConfig::parse(&CLASSIFIER.replace(from, to), "minilm").unwrap_err().to_string()
}

#[test]
fn invalid_values_name_the_field_and_line() {
    assert_eq!(
        error_for("max_batch_size: 32", "max_batch_size: -4"),
        "config.pbtxt line 4: max_batch_size: expected a non-negative integer up to 2147483647, found '-4'"
    );
    assert!(
        error_for("TYPE_FP32 dims: [ 2 ]", "TYPE_FLOAT dims: [ 2 ]").contains("output.data_type: 'TYPE_FLOAT' is not a TYPE_* data type")
    );
    assert!(error_for("dims: [ 384 ]", "dims: [ 0 ]").contains("output.dims: 0 is not a dimension"));
    assert!(error_for("max_queue_delay_microseconds: 2000", "max_queue_delay_microseconds: \"2000\"")
        .contains("dynamic_batching.max_queue_delay_microseconds: expected an integer"));
    assert!(error_for("timeout_action: REJECT", "timeout_action: DROP")
        .contains("dynamic_batching.default_queue_policy.timeout_action: 'DROP'"));
    assert!(error_for("preferred_batch_size: [ 8, 16 ]", "preferred_batch_size: [ 8, 64 ]")
        .contains("dynamic_batching.preferred_batch_size: 64 is larger than max_batch_size 32"));
    assert!(error_for("{ count: 1 }", "{ count: 0 }").contains("instance_group.count: 0 instances"));
    let mixed = error_for("{ count: 1 }", "{ count: 1 kind: KIND_GPU }");
    assert!(mixed.contains("instance_group.kind: KIND_GPU here but KIND_CPU on line"), "{mixed}");
    assert!(
        error_for("{ count: 1 }", "{ count: 1 kind: KIND_MODEL }").contains("'KIND_MODEL' is not served (KIND_AUTO, KIND_CPU or KIND_GPU)")
    );
    assert!(error_for("{ count: 2 kind: KIND_CPU }", "{ count: 2 kind: KIND_CPU gpus: [ 0 ] }")
        .contains("instance_group.gpus: KIND_CPU instances take no gpus"));
    assert!(error_for("latest: { num_versions: 2 }", "newest: { }").contains("version_policy: 'newest' is not latest, all or specific"));
    assert!(error_for("onnxruntime_onnx", "pytorch_libtorch").contains("platform: 'pytorch_libtorch' is not served"));
    assert!(error_for("name: \"minilm\"", "name: \"other\"").contains("name: 'other' differs from the model folder 'minilm'"));
    assert!(error_for("max_batch_size: 32", "max_batch_size 32").starts_with("config.pbtxt line 4: (syntax)"));
    assert!(error_for("platform: \"onnxruntime_onnx\"", "").contains("neither platform nor backend"));
}

#[test]
fn version_policies_select_from_disk() {
    let on_disk = [3, 1, 10, 2];
    assert_eq!(VersionPolicy::Latest(1).select(&on_disk), [10]);
    assert_eq!(VersionPolicy::Latest(2).select(&on_disk), [3, 10]);
    assert_eq!(VersionPolicy::Latest(9).select(&on_disk), [1, 2, 3, 10]);
    assert_eq!(VersionPolicy::All.select(&on_disk), [1, 2, 3, 10]);
    assert_eq!(VersionPolicy::Specific(vec![2, 7]).select(&on_disk), [2]);
    let c = ModelConfig::parse(&CLASSIFIER.replace("latest: { num_versions: 2 }", "specific: { versions: [1, 3] }"), "minilm").unwrap();
    assert_eq!(c.version_policy, VersionPolicy::Specific(vec![1, 3]));
}

#[test]
fn parameters_keep_their_string_values_in_order_and_unread_keys_are_warned_about() {
    let text = concat!(
        "platform: \"onnxruntime_onnx\"\nmax_batch_size: 8\n",
        "parameters [ { key: \"pad.input_ids\" value { string_value: \"0\" } }, { key: \"unpad.last_hidden_state\" value: { string_value: \"0=input_ids:0\" } } ]\n",
        "parameters { key: \"execution_mode\" value { string_value: \"1\" } }\n",
    );
    let c = ModelConfig::parse(text, "m").unwrap();
    let got: Vec<(&str, &str)> = c.parameters.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(got, [("pad.input_ids", "0"), ("unpad.last_hidden_state", "0=input_ids:0"), ("execution_mode", "1")]);
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    assert!(c.warnings[0].contains("line 4: parameter 'execution_mode' is not read by trt serve"), "{:?}", c.warnings);
    let twice = format!("{text}parameters {{ key: \"pad.input_ids\" value {{ string_value: \"1\" }} }}\n");
    assert!(ModelConfig::parse(&twice, "m").unwrap_err().to_string().contains("parameters.key: 'pad.input_ids' is given twice"));
    let no_value = "platform: \"onnxruntime_onnx\"\nparameters { key: \"pad.x\" }\n";
    assert!(ModelConfig::parse(no_value, "m").unwrap_err().to_string().contains("parameters.value.string_value: missing for 'pad.x'"));
}

#[test]
fn cuda_host_wait_is_block_or_spin_and_blocks_by_default() {
    let with =
        |v: &str| format!("platform: \"onnxruntime_onnx\"\nparameters {{ key: \"cuda_host_wait\" value {{ string_value: \"{v}\" }} }}\n");
    let spin = ModelConfig::parse(&with("spin"), "m").unwrap();
    assert_eq!(spin.cuda_host_wait, HostWait::Spin);
    assert!(spin.warnings.iter().all(|w| !w.contains("cuda_host_wait")), "read, so not warned about: {:?}", spin.warnings);
    assert_eq!(ModelConfig::parse(&with("block"), "m").unwrap().cuda_host_wait, HostWait::Block);
    let default = ModelConfig::parse("platform: \"onnxruntime_onnx\"\n", "m").unwrap();
    assert_eq!(default.cuda_host_wait, HostWait::Block, "a server's workers sleep unless told to spin");
    let e = ModelConfig::parse(&with("yield"), "m").unwrap_err().to_string();
    assert!(e.contains("parameters.cuda_host_wait") && e.contains("'yield' is neither block nor spin"), "{e}");
}

#[test]
fn cuda_row_buckets_is_a_true_or_false_parameter() {
    let with =
        |v: &str| format!("platform: \"onnxruntime_onnx\"\nparameters {{ key: \"cuda_row_buckets\" value {{ string_value: \"{v}\" }} }}\n");
    let on = ModelConfig::parse(&with("true"), "m").unwrap();
    assert!(on.cuda_row_buckets);
    assert!(on.warnings.iter().all(|w| !w.contains("cuda_row_buckets")), "read, so not warned about: {:?}", on.warnings);
    assert!(!ModelConfig::parse(&with("false"), "m").unwrap().cuda_row_buckets);
    assert!(!ModelConfig::parse("platform: \"onnxruntime_onnx\"\n", "m").unwrap().cuda_row_buckets, "off by default");
    let e = ModelConfig::parse(&with("yes"), "m").unwrap_err().to_string();
    assert!(e.contains("parameters.cuda_row_buckets") && e.contains("'yes' is neither true nor false"), "{e}");
}
