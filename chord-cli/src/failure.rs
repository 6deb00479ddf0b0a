//! How an error reaches the user: the error every command returns, and its message with the
//! causes behind it.

/// An error for the user: printed as `chord: <message>`, exit code 1.
pub(crate) type Failure = Box<dyn std::error::Error>;

/// An error's message followed by each of its causes the message does not already say
/// (`postgres://…: connect failed: error connecting to server: Connection refused`): the
/// library's errors name what failed, their sources why.
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}
