//! Whatever path a model sends, a resolved path stays inside the worktree.

use std::os::unix::fs::symlink;

use dandori_tools::{Access, Worktree};
use proptest::prelude::*;

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("..".to_string()),
        Just(".".to_string()),
        Just("".to_string()),
        Just("src".to_string()),
        Just("out".to_string()),
        Just("inner".to_string()),
        Just("dangling".to_string()),
        Just(".git".to_string()),
        Just("new".to_string()),
        Just("~".to_string()),
        "[a-z./\\\\~]{0,6}",
    ]
}

fn raw_path() -> impl Strategy<Value = String> {
    (any::<bool>(), prop::collection::vec(segment(), 0..6)).prop_map(|(abs, segs)| {
        let joined = segs.join("/");
        if abs { format!("/{joined}") } else { joined }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn resolved_paths_never_leave_the_worktree(path in raw_path(), write in any::<bool>()) {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("wt");
        let outside = base.path().join("outside");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("src/a.rs"), "a").unwrap();
        symlink(&outside, root.join("out")).unwrap();
        symlink("src", root.join("inner")).unwrap();
        symlink("/nonexistent/x", root.join("dangling")).unwrap();
        let worktree = Worktree::new(&root).unwrap();
        let access = if write { Access::Write } else { Access::Read };
        if let Ok(resolved) = worktree.resolve(&path, access) {
            let real_root = worktree.root();
            prop_assert!(resolved.absolute.starts_with(real_root), "{path} -> {}", resolved.absolute.display());
            prop_assert!(!resolved.relative.split('/').any(|c| c == ".."), "{path}");
            prop_assert!(!resolved.absolute.strip_prefix(real_root).unwrap().starts_with(".git"), "{path}");
            // The deepest existing ancestor, resolved, is still inside.
            let mut probe = resolved.absolute.clone();
            while std::fs::symlink_metadata(&probe).is_err() {
                prop_assert!(probe.pop());
            }
            let real = std::fs::canonicalize(&probe).unwrap();
            prop_assert!(real.starts_with(real_root), "{path} -> {}", real.display());
            if write {
                let final_is_link = std::fs::symlink_metadata(&resolved.absolute)
                    .map(|m| m.file_type().is_symlink())
                    .unwrap_or(false);
                prop_assert!(!final_is_link, "{path}");
            }
        }
    }
}
