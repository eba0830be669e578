//! The graph's weights handed to tract one at a time.
//!
//! Why: tract turns every initializer of the protobuf into a tensor of its
//! own before it builds the first node, so the protobuf's bytes and the
//! tensors made from them (each as large as the weights) would be held at
//! once, and in WebAssembly linear memory keeps that high-water mark.
//! [`parse`] takes the initializers out of the protobuf and lets tract parse
//! the graph without them (a name nothing produces becomes a source of the
//! model); [`Parsed::into_model`] then turns each such source into a
//! constant of its initializer, freeing the initializer's bytes as it goes:
//! at most one weight is held twice. The model is the one tract would have
//! built: the same constants under the same names, the same inputs in the
//! same order. In between, an op may take its weights from the
//! initializers in a form of its own (`int8::load_weights`).

use std::collections::HashMap;
use std::sync::Arc;

use tract_onnx::data_resolver::ModelDataResolver;
use tract_onnx::model::ParseResult;
use tract_onnx::pb::{ModelProto, TensorProto};
use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::ops::konst::Const;
use tract_onnx::Onnx;

/// A graph parsed by tract without its initializers, which wait here to
/// become its constants ([`Parsed::into_model`]).
pub struct Parsed {
    model: InferenceModel,
    /// In the file's order.
    initializers: Vec<TensorProto>,
    outlets_by_name: HashMap<String, OutletId>,
    unresolved_inputs: Vec<String>,
    provider: Arc<dyn ModelDataResolver + Send + Sync>,
}

/// `proto` parsed by `framework` without its initializers.
pub fn parse(framework: &Onnx, mut proto: ModelProto) -> TractResult<Parsed> {
    let graph = proto.graph.as_mut().context("the model has no graph")?;
    let initializers = std::mem::take(&mut graph.initializer);
    let ParseResult {
        model,
        unresolved_inputs,
        outlets_by_name,
    } = framework.parse(&proto, None)?;
    Ok(Parsed {
        model,
        initializers,
        outlets_by_name,
        unresolved_inputs,
        provider: framework.provider.clone(),
    })
}

impl Parsed {
    /// The model parsed so far.
    pub fn model(&self) -> &InferenceModel {
        &self.model
    }

    /// The model parsed so far, to give ops what they need.
    pub fn model_mut(&mut self) -> &mut InferenceModel {
        &mut self.model
    }

    /// The initializer `name` as the file stores it.
    pub fn initializer(&self, name: &str) -> TractResult<&TensorProto> {
        self.initializers
            .iter()
            .find(|initializer| initializer.name == name)
            .with_context(|| format!("no initializer `{name}`"))
    }

    /// The initializer `name` as a tensor.
    pub fn tensor(&self, name: &str) -> TractResult<Tensor> {
        tract_onnx::tensor::load_tensor(&*self.provider, self.initializer(name)?, None)
    }

    /// Frees the initializer `name` unless a node reads it (as a source of
    /// the model, waiting to become a constant).
    pub fn free_unread(&mut self, name: &str) {
        if self.source(name).is_none() {
            self.initializers
                .retain(|initializer| initializer.name != name);
        }
    }

    /// The source the parser made for the name `name`, if any.
    fn source(&self, name: &str) -> Option<OutletId> {
        self.outlets_by_name
            .get(name)
            .copied()
            .filter(|outlet| self.model.inputs.contains(outlet))
    }

    /// The model, as `framework.model_for_proto_model` would have built it
    /// from the whole protobuf: each initializer a node reads turned into a
    /// constant in turn, its bytes freed as it is.
    pub fn into_model(mut self) -> TractResult<InferenceModel> {
        for initializer in std::mem::take(&mut self.initializers) {
            // An initializer nothing reads, or one a node's output
            // shadows, is not a source: tract would leave it out as well.
            let Some(outlet) = self.source(&initializer.name) else {
                continue;
            };
            let tensor = tract_onnx::tensor::load_tensor(&*self.provider, &initializer, None)
                .with_context(|| format!("loading the initializer `{}`", initializer.name))?;
            drop(initializer);
            make_constant(&mut self.model, outlet, tensor)?;
        }
        let unresolved: Vec<&String> = self
            .unresolved_inputs
            .iter()
            .filter(|name| self.source(name).is_some())
            .collect();
        ensure!(
            unresolved.is_empty(),
            "Could not resolve inputs at top-level: {unresolved:?}"
        );
        Ok(self.model)
    }
}

/// Turns the source `outlet` of `model` into a constant holding `tensor`,
/// the node tract's parser adds for an initializer.
fn make_constant(model: &mut InferenceModel, outlet: OutletId, tensor: Tensor) -> TractResult<()> {
    let tensor = tensor.into_arc_tensor();
    let fact = TypedFact::try_from(tensor.clone())?;
    let node = model
        .nodes
        .get_mut(outlet.node)
        .context("a source outside the model")?;
    node.op = Const::new(tensor)?.into();
    node.outputs
        .get_mut(outlet.slot)
        .context("a source without its output")?
        .fact = fact.into();
    model.inputs.retain(|input| *input != outlet);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::onnx::onnx;
    use crate::embed::onnx::tests::{node, one_node};
    use tract_onnx::pb::tensor_proto::DataType;
    use tract_onnx::pb::TensorProto;

    fn floats(name: &str, values: &[f32]) -> TensorProto {
        TensorProto {
            name: name.into(),
            dims: vec![values.len() as i64],
            data_type: DataType::Float as i32,
            raw_data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            ..TensorProto::default()
        }
    }

    /// The nodes of `model`, sorted: name, operator and constant value; and
    /// the names of its inputs.
    fn nodes_of(model: &InferenceModel) -> (Vec<String>, Vec<String>) {
        let mut nodes: Vec<String> = model
            .nodes
            .iter()
            .map(|node| {
                let value = node.op_as::<Const>().map(|c| format!("{:?}", c.val()));
                format!("{} {} {value:?}", node.name, node.op.name())
            })
            .collect();
        nodes.sort();
        let inputs = model
            .inputs
            .iter()
            .map(|outlet| model.node(outlet.node).name.clone())
            .collect();
        (nodes, inputs)
    }

    /// `model` run on `x = [10, 20]`.
    fn run(model: InferenceModel) -> Vec<f32> {
        let model = model
            .with_input_fact(0, InferenceFact::dt_shape(f32::datum_type(), [2]))
            .unwrap();
        let plan = model.into_optimized().unwrap().into_runnable().unwrap();
        let x = Tensor::from_shape(&[2], &[10f32, 20.0]).unwrap();
        let output = plan.run(tvec![x.into_tvalue()]).unwrap();
        let view = output[0].try_as_plain_ram().unwrap();
        view.as_slice::<f32>().unwrap().to_vec()
    }

    #[test]
    fn the_model_is_the_one_tract_builds_from_the_initializers() {
        // `y = x + a`, and `b` an initializer nothing reads.
        let proto = one_node(
            17,
            node("Add", &["x", "a"], &["y"], vec![]),
            vec![floats("a", &[1.0, 2.0]), floats("b", &[3.0])],
        );
        let framework = onnx();
        let tract = (*framework).model_for_proto_model(&proto).unwrap();
        let ours = parse(&framework, proto).unwrap().into_model().unwrap();
        let (mut tract_nodes, tract_inputs) = nodes_of(&tract);
        let (our_nodes, our_inputs) = nodes_of(&ours);
        assert_eq!(our_inputs, ["x"]);
        assert_eq!(our_inputs, tract_inputs);
        // tract also keeps a constant for `b`, which nothing reads.
        tract_nodes.retain(|node| !node.starts_with("b "));
        assert_eq!(our_nodes, tract_nodes);
        assert!(our_nodes.iter().any(|node| node.starts_with("a Const")));
        let values = run(ours);
        assert_eq!(values, [11.0, 22.0]);
        assert_eq!(values, run(tract));
    }

    #[test]
    fn a_name_neither_produced_nor_initialized_is_an_error() {
        let proto = one_node(17, node("Add", &["x", "missing"], &["y"], vec![]), vec![]);
        let error = parse(&onnx(), proto).unwrap().into_model().unwrap_err();
        assert!(format!("{error}").contains("\"missing\""), "{error}");
    }
}
