//! The models behind every protocol: the repository and its versions, how a version is loaded
//! and placed on GPUs, and the queues that run its requests.
//!
//! | module | what it does |
//! |---|---|
//! | `repository` | Triton's repository layout, version policy, load / unload, atomic version switch with drain |
//! | `repository_sync` | what the model-control mode does to a repository: the models loaded at start, the poller of `poll` mode |
//! | `model_control` | model-control modes `none` / `explicit` / `poll`, strict readiness |
//! | `single_model` | one model folder served directly (KServe's `/mnt/models`, `--model-id`) |
//! | `loader` | a version folder opened through trt-nlp (model folder, backend for the platform, tokenizer) |
//! | `placement` | `instance_group` on the GPUs: device instances, checked against the GPUs there are |
//! | `dispatch` | admission, queue timeout and execution for one version of a text model |
//! | `text_model` | a config bound to trt-nlp's `TextModel`: the text input, the outputs it exposes (the pooled `embedding`, a token classifier's `entities`) |
//! | `tensor_model` | a config bound to trt-nlp's `TensorBackend`: tensor inputs and outputs of any numeric type, checked or read from the model |
//! | `tensor_dispatch` | a tensor model's queue: requests of equal shapes stacked along the batch axis |
//! | `tensor_padding` | ragged requests in one batch: `pad.<input>` / `unpad.<output>` config parameters, padding to the longest, outputs cut back |

pub mod dispatch;
pub mod loader;
pub mod model_control;
pub mod placement;
pub mod repository;
pub mod repository_sync;
pub mod single_model;
pub mod tensor_dispatch;
pub mod tensor_model;
pub mod tensor_padding;
pub mod text_model;
