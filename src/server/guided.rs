//! The protocol's `guided_decoding` field to the crate's guided decoding params (the protocol numbers
//! its guide types from 1, after `GUIDE_TYPE_UNSPECIFIED`; the executor from 0).

use tonic::Status;

use crate::proto::trtllm as pb;
use crate::types::guided::{GuideType, GuidedDecodingParams};

/// The request's guide, or `None` when it has none; INVALID_ARGUMENT names what is wrong.
pub fn guided_decoding(request: &pb::GenerateRequest) -> Result<Option<GuidedDecodingParams>, Status> {
    let Some(params) = request.guided_decoding.as_ref() else {
        return Ok(None);
    };
    use pb::guided_decoding_params::GuideType as Pb;
    let guide_type = match Pb::try_from(params.guide_type) {
        Ok(Pb::Json) => GuideType::Json,
        Ok(Pb::JsonSchema) => GuideType::JsonSchema,
        Ok(Pb::Regex) => GuideType::Regex,
        Ok(Pb::EbnfGrammar) => GuideType::EbnfGrammar,
        Ok(Pb::StructuralTag) => GuideType::StructuralTag,
        Ok(Pb::Unspecified) | Err(_) => {
            return Err(Status::invalid_argument(format!(
                "guided_decoding.guide_type: {} is not a guide type (1 = JSON ... 5 = STRUCTURAL_TAG)",
                params.guide_type
            )));
        }
    };
    // JSON takes no guide; every other type carries its text (an empty one fails validation).
    let guide = (guide_type != GuideType::Json).then(|| params.guide.clone());
    let params = GuidedDecodingParams { guide_type, guide };
    params.validate().map_err(|e| Status::invalid_argument(e.to_string()))?;
    Ok(Some(params))
}
