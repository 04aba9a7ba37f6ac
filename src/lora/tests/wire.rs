//! The gRPC `lora_config` layout round-trips and rejects fields that do not fit together.

use super::engine;
use crate::lora::{
    LoraConfig, LoraDtype, LoraError, LoraModule, LoraWeights, WireLoraConfig, decode_wire, encode_wire, rows_from_json,
};

fn settings() -> crate::lora::EngineLoraSettings {
    engine(&[LoraModule::AttnQ, LoraModule::AttnV, LoraModule::Mlp4hToH], LoraDtype::Bf16)
}

fn wire(task_id: i64, weights: Option<Vec<u8>>, config_json: Option<&str>) -> WireLoraConfig {
    WireLoraConfig { task_id, weights, config_json: config_json.map(str::to_owned) }
}

#[test]
fn an_adapter_round_trips_through_the_wire_layout() {
    let settings = settings();
    let adapter = LoraConfig::with_weights(9, LoraWeights::synthetic(&settings, 2, 4).unwrap());
    let encoded = encode_wire(&adapter);
    let weights = adapter.weights.as_ref().unwrap();
    // The bytes are the weights tensor itself; the JSON lists the rows.
    assert_eq!(encoded.weights.as_deref(), Some(weights.data()));
    assert_eq!(rows_from_json(encoded.config_json.as_deref().unwrap()).unwrap(), weights.rows());
    let decoded = decode_wire(encoded, Some(&settings)).unwrap();
    assert_eq!(decoded, Some(adapter));
}

#[test]
fn the_task_id_alone_refers_to_a_cached_adapter_and_zero_means_none() {
    let settings = settings();
    assert_eq!(decode_wire(wire(5, None, None), Some(&settings)).unwrap(), Some(LoraConfig::cached(5)));
    assert_eq!(decode_wire(wire(0, None, None), Some(&settings)).unwrap(), None);
    assert_eq!(decode_wire(wire(0, None, None), None).unwrap(), None);
    assert_eq!(encode_wire(&LoraConfig::cached(5)), wire(5, None, None));
}

#[test]
fn fields_that_do_not_fit_together_are_refused() {
    let settings = settings();
    let json = "[[1,0,1]]";
    let bytes = vec![0u8; 2 * 16];
    let cases = [
        wire(-1, None, None),
        wire(0, Some(bytes.clone()), Some(json)),
        wire(3, Some(bytes.clone()), None),
        wire(3, None, Some(json)),
        // 31 bytes is not a whole number of bf16 values for one row.
        wire(3, Some(vec![0; 31]), Some(json)),
    ];
    for case in cases {
        let text = format!("{case:?}");
        assert!(matches!(decode_wire(case, Some(&settings)), Err(LoraError::InvalidWire(_))), "{text}");
    }
    assert!(matches!(decode_wire(wire(3, None, None), None), Err(LoraError::NotEnabled)));
    assert!(matches!(decode_wire(wire(3, Some(bytes), Some(json)), None), Err(LoraError::NotEnabled)));
}

#[test]
fn rows_are_checked_against_the_engine_after_decoding() {
    let settings = settings();
    // attn_q at rank 2 needs 32 values but the single row holds 16.
    let err = decode_wire(wire(3, Some(vec![0; 32]), Some("[[1,0,2]]")), Some(&settings)).unwrap_err();
    assert!(matches!(err, LoraError::RowTooShort { module: LoraModule::AttnQ, layer: 0, .. }), "{err}");
    let err = decode_wire(wire(3, Some(vec![0; 32]), Some("[[2,0,1]]")), Some(&settings)).unwrap_err();
    assert!(matches!(err, LoraError::ModuleNotEnabled { module: LoraModule::AttnK, .. }), "{err}");
    let err = decode_wire(wire(3, Some(vec![0; 32]), Some("[[1,7,1]]")), Some(&settings)).unwrap_err();
    assert!(matches!(err, LoraError::LayerOutOfRange { layer: 7, .. }), "{err}");
}

#[test]
fn malformed_config_json_is_refused() {
    assert!(matches!(rows_from_json("[[40,0,1]]"), Err(LoraError::UnknownModuleId(40))));
    assert!(matches!(rows_from_json("[[1,-1,1]]"), Err(LoraError::MalformedRow { index: 0, .. })));
    assert!(matches!(rows_from_json("[[1,0,1],[1,1]]"), Err(LoraError::MalformedRow { index: 1, .. })));
    assert!(matches!(rows_from_json("[[1,0,1,1]]"), Err(LoraError::MalformedRow { index: 0, .. })));
    assert!(matches!(rows_from_json("[]"), Err(LoraError::Empty)));
    assert!(matches!(rows_from_json("{\"rows\": 1}"), Err(LoraError::InvalidWire(_))));
    assert!(matches!(rows_from_json("not json"), Err(LoraError::InvalidWire(_))));
    // A zero DoRA column is the pre-DoRA row.
    assert_eq!(rows_from_json("[[1,0,1,0]]").unwrap(), rows_from_json("[[1,0,1]]").unwrap());
}
