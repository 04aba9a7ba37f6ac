//! Hand-laid-out adapters are checked against the engine row by row.

use super::engine;
use crate::lora::{LoraConfig, LoraConfigRow, LoraDtype, LoraError, LoraModule, LoraWeights};

fn row(module: LoraModule, layer: u32, rank: u32) -> LoraConfigRow {
    LoraConfigRow { module, layer, rank }
}

#[test]
fn a_well_formed_adapter_passes() {
    let settings = engine(&[LoraModule::AttnQ, LoraModule::Mlp4hToH], LoraDtype::F16);
    let weights = LoraWeights::from_rows(
        LoraDtype::F16,
        vec![(row(LoraModule::AttnQ, 0, 4), vec![0.0; 64]), (row(LoraModule::Mlp4hToH, 1, 1), vec![0.0; 20])],
    )
    .unwrap();
    assert_eq!(weights.validate(&settings).map_err(|e| e.to_string()), Ok(()));
    assert_eq!(LoraConfig::with_weights(3, weights).validate(&settings).map_err(|e| e.to_string()), Ok(()));
    assert_eq!(LoraConfig::cached(3).validate(&settings).map_err(|e| e.to_string()), Ok(()));
}

#[test]
fn each_bad_row_is_named() {
    let settings = engine(&[LoraModule::AttnQ, LoraModule::AttnV], LoraDtype::F16);
    let check = |rows: Vec<(LoraConfigRow, Vec<f32>)>| {
        LoraWeights::from_rows(LoraDtype::F16, rows).unwrap().validate(&settings)
    };

    let err = check(vec![(row(LoraModule::AttnQ, 0, 2), vec![0.0; 32]), (row(LoraModule::AttnQ, 0, 2), vec![0.0; 32])]);
    assert!(matches!(err, Err(LoraError::DuplicateRow { module: LoraModule::AttnQ, layer: 0 })), "{err:?}");

    let err = check(vec![(row(LoraModule::AttnV, 1, 0), vec![0.0; 8])]);
    assert!(matches!(err, Err(LoraError::InvalidRank { module: LoraModule::AttnV, layer: 1, rank: 0, .. })), "{err:?}");

    // attn_v at rank 2 needs 2·(8+4) = 24 values; the rows hold 20.
    let err = check(vec![(row(LoraModule::AttnV, 1, 2), vec![0.0; 20])]);
    assert!(
        matches!(err, Err(LoraError::RowTooShort { module: LoraModule::AttnV, layer: 1, needed: 24, row_len: 20, .. })),
        "{err:?}"
    );

    let err = check(vec![(row(LoraModule::MlpGate, 0, 1), vec![0.0; 20])]);
    assert!(matches!(err, Err(LoraError::ModuleNotEnabled { module: LoraModule::MlpGate, layer: 0, .. })), "{err:?}");
}

#[test]
fn weights_in_another_dtype_are_refused() {
    let settings = engine(&[LoraModule::AttnQ], LoraDtype::Bf16);
    let weights = LoraWeights::from_rows(LoraDtype::F32, vec![(row(LoraModule::AttnQ, 0, 1), vec![0.0; 16])]).unwrap();
    assert!(matches!(
        weights.validate(&settings),
        Err(LoraError::DtypeMismatch { expected: LoraDtype::Bf16, found: LoraDtype::F32 })
    ));
}

#[test]
fn raw_weights_must_fill_their_shape_exactly() {
    let rows = vec![row(LoraModule::AttnQ, 0, 1)];
    assert!(matches!(
        LoraWeights::new(rows.clone(), 16, LoraDtype::F16, vec![0; 31]),
        Err(LoraError::WeightsSize { expected: 32, actual: 31, .. })
    ));
    assert!(matches!(LoraWeights::new(Vec::new(), 16, LoraDtype::F16, Vec::new()), Err(LoraError::Empty)));
    assert!(LoraWeights::new(rows, 16, LoraDtype::F16, vec![0; 32]).is_ok());
}

#[test]
fn synthetic_adapters_cover_every_module_and_layer_and_depend_on_the_seed() {
    let settings = engine(&[LoraModule::AttnQ, LoraModule::AttnV, LoraModule::Mlp4hToH], LoraDtype::F16);
    let a = LoraWeights::synthetic(&settings, 3, 1).unwrap();
    assert_eq!(a.validate(&settings).map_err(|e| e.to_string()), Ok(()));
    let mut rows: Vec<[i32; 3]> = a.rows().iter().map(|r| r.to_i32()).collect();
    rows.sort();
    assert_eq!(rows, vec![[1, 0, 3], [1, 1, 3], [3, 0, 3], [3, 1, 3], [6, 0, 3], [6, 1, 3]]);
    assert_eq!(a.row_len(), 3 * (12 + 8));
    assert_eq!(a, LoraWeights::synthetic(&settings, 3, 1).unwrap());
    assert_ne!(a.data(), LoraWeights::synthetic(&settings, 3, 2).unwrap().data());
    assert!(a.row_values(0).iter().all(|v| v.abs() <= 0.01));
    assert!(a.row_values(0).iter().any(|v| *v != 0.0));
    assert!(matches!(LoraWeights::synthetic(&settings, 5, 1), Err(LoraError::InvalidRank { rank: 5, .. })));
}
