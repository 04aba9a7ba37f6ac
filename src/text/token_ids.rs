//! Conversions between the executor's `i32` token ids and the tokenizer's `u32` ids.

use super::error::{Result, TextError};

/// Converts executor token ids (`i32`) into tokenizer ids (`u32`), rejecting negative ids.
///
/// ```rust
/// use trtllm::text::{token_ids_from_i32, TextError};
///
/// assert_eq!(token_ids_from_i32(&[0, 7, 42])?, vec![0, 7, 42]);
/// assert!(matches!(token_ids_from_i32(&[1, -1]), Err(TextError::NegativeTokenId(-1))));
/// # Ok::<(), TextError>(())
/// ```
pub fn token_ids_from_i32(ids: &[i32]) -> Result<Vec<u32>> {
    ids.iter().map(|&id| u32::try_from(id).map_err(|_| TextError::NegativeTokenId(id))).collect()
}

/// Converts tokenizer ids (`u32`) into executor token ids (`i32`), rejecting ids above `i32::MAX`.
///
/// ```rust
/// use trtllm::text::{token_ids_to_i32, TextError};
///
/// assert_eq!(token_ids_to_i32(&[0, 7, 42])?, vec![0, 7, 42]);
/// assert!(matches!(token_ids_to_i32(&[u32::MAX]), Err(TextError::TokenIdTooLarge(u32::MAX))));
/// # Ok::<(), TextError>(())
/// ```
pub fn token_ids_to_i32(ids: &[u32]) -> Result<Vec<i32>> {
    ids.iter().map(|&id| i32::try_from(id).map_err(|_| TextError::TokenIdTooLarge(id))).collect()
}
