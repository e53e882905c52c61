//! The embedded example repository (`examples/todo-api`, compiled into the binary
//! so `dandori demo` works from an installed binary) and the demo agent's script.

/// `(path, contents)` of every file of the example, as committed in the demo repository.
pub const FILES: &[(&str, &str)] = &[
    (
        ".gitignore",
        include_str!("../../../examples/todo-api/.gitignore"),
    ),
    (
        "README.md",
        include_str!("../../../examples/todo-api/README.md"),
    ),
    (
        "pyproject.toml",
        include_str!("../../../examples/todo-api/pyproject.toml"),
    ),
    (
        "requests/RQ-001.md",
        include_str!("../../../examples/todo-api/requests/RQ-001.md"),
    ),
    (
        "requests/RQ-002.md",
        include_str!("../../../examples/todo-api/requests/RQ-002.md"),
    ),
    (
        "requests/RQ-003.md",
        include_str!("../../../examples/todo-api/requests/RQ-003.md"),
    ),
    (
        "tests/__init__.py",
        include_str!("../../../examples/todo-api/tests/__init__.py"),
    ),
    (
        "tests/test_api.py",
        include_str!("../../../examples/todo-api/tests/test_api.py"),
    ),
    (
        "tests/test_store.py",
        include_str!("../../../examples/todo-api/tests/test_store.py"),
    ),
    (
        "todo/__init__.py",
        include_str!("../../../examples/todo-api/todo/__init__.py"),
    ),
    (
        "todo/api.py",
        include_str!("../../../examples/todo-api/todo/api.py"),
    ),
    (
        "todo/models.py",
        include_str!("../../../examples/todo-api/todo/models.py"),
    ),
    (
        "todo/server.py",
        include_str!("../../../examples/todo-api/todo/server.py"),
    ),
    (
        "todo/store.py",
        include_str!("../../../examples/todo-api/todo/store.py"),
    ),
];

/// The request the demo plans.
pub const REQUEST: &str = "requests/RQ-001.md";

/// The demo agent's script for [`REQUEST`]: for each file, the versions it goes
/// through after the example's own (version 0), in order. A step advances each of
/// its target files by one version, so the work lands in whatever steps the
/// planner made, and every version keeps the example's tests passing.
pub const SCRIPT: &[(&str, &[&str])] = &[
    (
        "todo/models.py",
        &[include_str!("../script/todo/models.py.1")],
    ),
    (
        "todo/api.py",
        &[
            include_str!("../script/todo/api.py.1"),
            include_str!("../script/todo/api.py.2"),
            include_str!("../script/todo/api.py.3"),
        ],
    ),
    (
        "todo/store.py",
        &[
            include_str!("../script/todo/store.py.1"),
            include_str!("../script/todo/store.py.2"),
        ],
    ),
    // The tests grow with the code: each unit of work writes its own.
    (
        "tests/test_store.py",
        &[
            include_str!("../script/tests/test_store.py.1"),
            include_str!("../script/tests/test_store.py.2"),
        ],
    ),
    (
        "tests/test_api.py",
        &[
            include_str!("../script/tests/test_api.py.1"),
            include_str!("../script/tests/test_api.py.2"),
            include_str!("../script/tests/test_api.py.3"),
        ],
    ),
    ("README.md", &[include_str!("../script/README.md.1")]),
];

/// The example's original contents of `path` (version 0).
pub fn original(path: &str) -> Option<&'static str> {
    FILES.iter().find(|(p, _)| *p == path).map(|(_, c)| *c)
}
