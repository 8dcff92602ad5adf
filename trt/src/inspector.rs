//! The engine inspector's JSON (`IEngineInspector::getEngineInformation`)
//! as serde types: one entry per engine layer with its type, tensors and
//! tactic when the plan was built with detailed profiling verbosity, only its
//! name otherwise (`kLAYER_NAMES_ONLY`, TensorRT's default).
//!
//! The detailed form is an object per layer (`"Name"`, `"LayerType"`,
//! `"Inputs"`/`"Outputs"` with `"Format/Datatype"`, `"TacticName"`, ...);
//! keys this crate does not name are kept in [`DetailedLayer::other`].

use serde::{Deserialize, Serialize};

use crate::{Engine, Error, Result};

/// The whole document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineInfo {
    /// The engine's layers, in execution order.
    #[serde(rename = "Layers", default)]
    pub layers: Vec<EngineLayer>,
    /// Names of the I/O tensors.
    #[serde(rename = "Bindings", default)]
    pub bindings: Vec<String>,
}

/// One layer: a bare name, or the detailed description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EngineLayer {
    /// `kLAYER_NAMES_ONLY`: the name alone.
    Name(String),
    /// `kDETAILED`.
    Detailed(DetailedLayer),
}

/// A layer as `kDETAILED` verbosity describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DetailedLayer {
    /// Layer name (fused layers join their network layers' names).
    #[serde(rename = "Name")]
    pub name: String,
    /// Kernel family, e.g. `CaskConvolution`, `Reformat`, `MyelinGraph`.
    #[serde(rename = "LayerType", default)]
    pub layer_type: Option<String>,
    /// Input tensors.
    #[serde(rename = "Inputs", default)]
    pub inputs: Vec<TensorDesc>,
    /// Output tensors.
    #[serde(rename = "Outputs", default)]
    pub outputs: Vec<TensorDesc>,
    /// The chosen tactic's name.
    #[serde(rename = "TacticName", default)]
    pub tactic: Option<String>,
    /// Everything else the inspector reported.
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

/// A tensor of a detailed layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorDesc {
    /// Tensor name.
    #[serde(rename = "Name", default)]
    pub name: String,
    /// `Device` or `Host`.
    #[serde(rename = "Location", default)]
    pub location: Option<String>,
    /// Dimensions (-1 for dynamic ones).
    #[serde(rename = "Dimensions", default)]
    pub dimensions: Vec<i64>,
    /// Memory format and data type in words, e.g. `Row major linear FP32`.
    #[serde(rename = "Format/Datatype", default)]
    pub format: Option<String>,
}

impl EngineInfo {
    /// Parse the inspector's JSON.
    pub fn parse(json: &str) -> Result<Self> {
        serde_json::from_str(json).map_err(|e| Error::InvalidArgument(format!("engine inspector JSON: {e}")))
    }

    /// The layer named `name`.
    pub fn layer(&self, name: &str) -> Option<&EngineLayer> {
        self.layers.iter().find(|l| l.name() == name)
    }
}

impl EngineLayer {
    /// The layer's name.
    pub fn name(&self) -> &str {
        match self {
            EngineLayer::Name(n) => n,
            EngineLayer::Detailed(d) => &d.name,
        }
    }

    /// The kernel family, when detailed.
    pub fn layer_type(&self) -> Option<&str> {
        match self {
            EngineLayer::Name(_) => None,
            EngineLayer::Detailed(d) => d.layer_type.as_deref(),
        }
    }

    /// The data type of the first output (`FP32`, `FP16`, `BF16`, `Int8`, `FP8`,
    /// `Int32`, `Int64`, `Bool`, ...), read from its `Format/Datatype`, when detailed.
    pub fn precision(&self) -> Option<String> {
        let EngineLayer::Detailed(d) = self else { return None };
        let format = d.outputs.first().or(d.inputs.first())?.format.as_deref()?;
        const TYPES: [&str; 12] = ["FP32", "FP16", "BF16", "FP8", "FP4", "Int8", "Int4", "Int32", "Int64", "UInt8", "Bool", "Half"];
        let word = format.split(|c: char| !c.is_ascii_alphanumeric()).find(|w| TYPES.iter().any(|t| t.eq_ignore_ascii_case(w)))?;
        Some(if word.eq_ignore_ascii_case("half") { "FP16".to_owned() } else { word.to_owned() })
    }
}

impl Engine {
    /// The engine inspector's layer information, parsed.
    pub fn layer_info(&self) -> Result<EngineInfo> {
        EngineInfo::parse(&self.layer_info_json()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_verbosities() {
        let names = EngineInfo::parse(r#"{"Layers": ["a", "b + c"], "Bindings": ["x", "y"]}"#).unwrap();
        assert_eq!(names.layers.len(), 2);
        assert_eq!(names.layers[1].name(), "b + c");
        assert_eq!(names.layers[1].precision(), None);
        assert_eq!(names.bindings, ["x", "y"]);
        let detailed = EngineInfo::parse(
            r#"{"Layers": [{"Name": "conv + relu", "LayerType": "CaskConvolution",
                "Inputs": [{"Name": "x", "Location": "Device", "Dimensions": [1, 3, -1, -1], "Format/Datatype": "Row major linear FP32"}],
                "Outputs": [{"Name": "y", "Location": "Device", "Dimensions": [1, 8, -1, -1], "Format/Datatype": "Channel major FP16 format where channel % 8 == 0"}],
                "TacticName": "sm80_xmma_fprop", "StreamId": 0}], "Bindings": ["x", "y"]}"#,
        )
        .unwrap();
        let l = detailed.layer("conv + relu").unwrap();
        assert_eq!(l.layer_type(), Some("CaskConvolution"));
        assert_eq!(l.precision().as_deref(), Some("FP16"));
        let EngineLayer::Detailed(d) = l else { panic!("detailed") };
        assert_eq!(d.inputs[0].dimensions, [1, 3, -1, -1]);
        assert_eq!(d.other["StreamId"], 0);
        assert!(EngineInfo::parse("not json").is_err());
    }
}
