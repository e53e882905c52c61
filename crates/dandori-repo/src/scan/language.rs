//! File extension → language.

/// The language of a path by its extension or well-known file name.
pub fn language_for(path: &str) -> Option<&'static str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name {
        "Makefile" | "makefile" | "GNUmakefile" => return Some("make"),
        "Dockerfile" => return Some("docker"),
        "CMakeLists.txt" => return Some("cmake"),
        _ => {}
    }
    let ext = extension(name)?;
    let lang = match ext.to_ascii_lowercase().as_str() {
        "py" | "pyi" | "pyx" => "python",
        "js" | "mjs" | "cjs" | "jsx" => "javascript",
        "ts" | "tsx" | "mts" | "cts" => "typescript",
        "java" => "java",
        "kt" | "kts" => "kotlin",
        "scala" => "scala",
        "go" => "go",
        "rs" => "rust",
        "rb" => "ruby",
        "php" => "php",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => "cpp",
        "cs" => "csharp",
        "swift" => "swift",
        "m" | "mm" => "objc",
        "sh" | "bash" | "zsh" => "shell",
        "ps1" => "powershell",
        "lua" => "lua",
        "r" => "r",
        "jl" => "julia",
        "ex" | "exs" => "elixir",
        "erl" => "erlang",
        "hs" => "haskell",
        "ml" | "mli" => "ocaml",
        "dart" => "dart",
        "vue" => "vue",
        "svelte" => "svelte",
        "html" | "htm" => "html",
        "css" | "scss" | "sass" | "less" => "css",
        "sql" => "sql",
        "md" | "markdown" => "markdown",
        "rst" => "rst",
        "txt" => "text",
        "json" => "json",
        "yaml" | "yml" => "yaml",
        "toml" => "toml",
        "xml" => "xml",
        "ini" | "cfg" | "conf" => "config",
        "proto" => "protobuf",
        "gradle" => "gradle",
        _ => return None,
    };
    Some(lang)
}

/// The extension of a file name (not of a dot file such as `.gitignore`).
pub(crate) fn extension(name: &str) -> Option<&str> {
    let (stem, ext) = name.rsplit_once('.')?;
    if stem.is_empty() { None } else { Some(ext) }
}

/// Languages whose files are program source (as opposed to docs, data, config).
pub fn is_code_language(lang: &str) -> bool {
    !matches!(
        lang,
        "markdown" | "rst" | "text" | "json" | "yaml" | "toml" | "xml" | "config" | "html" | "css"
    )
}

/// Extensions known to be binary, so the walk need not open them.
pub(crate) fn binary_extension(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let Some(ext) = extension(name) else {
        return false;
    };
    matches!(
        ext.to_ascii_lowercase().as_str(),
        "png"
            | "jpg"
            | "jpeg"
            | "gif"
            | "bmp"
            | "ico"
            | "webp"
            | "tif"
            | "tiff"
            | "psd"
            | "pdf"
            | "zip"
            | "gz"
            | "tgz"
            | "bz2"
            | "xz"
            | "zst"
            | "7z"
            | "rar"
            | "tar"
            | "jar"
            | "war"
            | "class"
            | "so"
            | "dylib"
            | "dll"
            | "exe"
            | "o"
            | "a"
            | "lib"
            | "pyc"
            | "pyo"
            | "whl"
            | "egg"
            | "wasm"
            | "bin"
            | "dat"
            | "db"
            | "sqlite"
            | "woff"
            | "woff2"
            | "ttf"
            | "otf"
            | "eot"
            | "mp3"
            | "mp4"
            | "wav"
            | "ogg"
            | "flac"
            | "avi"
            | "mov"
            | "mkv"
            | "webm"
            | "npy"
            | "npz"
            | "pkl"
            | "h5"
            | "fits"
            | "parquet"
            | "onnx"
            | "pt"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_by_extension_and_name() {
        assert_eq!(language_for("a/b/c.py"), Some("python"));
        assert_eq!(language_for("src/App.tsx"), Some("typescript"));
        assert_eq!(language_for("Makefile"), Some("make"));
        assert_eq!(language_for(".gitignore"), None);
        assert_eq!(language_for("LICENSE"), None);
        assert!(binary_extension("img/logo.PNG"));
        assert!(!binary_extension("src/main.rs"));
    }
}
