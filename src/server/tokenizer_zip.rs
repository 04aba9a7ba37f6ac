//! The tokenizer files as one zip, chunked for the GetTokenizer stream.

use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};

/// Zips `files` (flat, by file name) and returns the bytes and their sha256 in hex.
pub fn zip_files(files: &[impl AsRef<Path>]) -> std::io::Result<(Vec<u8>, String)> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for file in files {
        let path = file.as_ref();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        zip.start_file(name, options).map_err(std::io::Error::other)?;
        zip.write_all(&std::fs::read(path)?)?;
    }
    let bytes = zip.finish().map_err(std::io::Error::other)?.into_inner();
    let digest = Sha256::digest(&bytes);
    let hex = digest.iter().map(|b| format!("{b:02x}")).collect();
    Ok((bytes, hex))
}
