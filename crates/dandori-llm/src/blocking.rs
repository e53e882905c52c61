//! Calling the async client from synchronous code.

/// Runs a future to completion from synchronous code, on a fresh current-thread
/// runtime in a scoped thread (so it also works when the caller is itself inside
/// a runtime, e.g. the MCP server's).
pub fn block_on<F>(future: F) -> Result<F::Output, std::io::Error>
where
    F: Future + Send,
    F::Output: Send,
{
    std::thread::scope(|scope| {
        let handle = scope.spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            Ok(rt.block_on(future))
        });
        match handle.join() {
            Ok(result) => result,
            Err(_) => Err(std::io::Error::other("the model-call thread panicked")),
        }
    })
}
