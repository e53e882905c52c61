//! Property tests of the command-line parser behind the policy.

use dandori_exec::CommandPolicy;
use proptest::prelude::*;

proptest! {
    /// Any input gives an answer (a parse or a reason code), never a panic.
    #[test]
    fn never_panics(line in "\\PC{0,200}") {
        let _ = CommandPolicy::default().check(&line);
    }

    /// Shell-quoted arguments come back exactly: quoting hides metacharacters
    /// from the operator splitting.
    #[test]
    fn quoted_arguments_round_trip(args in proptest::collection::vec("[ -~]{0,20}", 0..6)) {
        let mut words = vec!["pip".to_string()];
        words.extend(args.iter().cloned());
        let line = shell_words::join(&words);
        // Arguments that name protected paths are refused on purpose; skip them.
        if let Ok(p) = CommandPolicy::default().check(&line) {
            prop_assert_eq!(p.commands.len(), 1);
            prop_assert_eq!(&p.commands[0].program, "pip");
            prop_assert_eq!(&p.commands[0].args, &args);
        }
    }

    /// A hostile command hidden behind any chain of allowed ones is still found.
    #[test]
    fn hostile_tail_is_found(prefix in proptest::collection::vec("(npm ci|pip install x|go mod download|echo hi)", 0..4),
                             op in "(;|&&|\\|\\|)") {
        let mut line = prefix.join(" && ");
        if !line.is_empty() {
            line.push_str(&format!(" {op} "));
        }
        line.push_str("sudo reboot");
        let v = CommandPolicy::default().check(&line).unwrap_err();
        prop_assert_eq!(v.code, "POLICY_PRIVILEGE_ESCALATION");
    }
}
