use proptest::prelude::*;

use dandori_repo::retrieval::tokenize::{TokenOptions, split_identifier, tokens};

proptest! {
    #[test]
    fn tokens_are_nonempty_and_lowercase(s in "\\PC{0,80}") {
        for t in tokens(&s, TokenOptions::TEXT) {
            prop_assert!(!t.is_empty());
            prop_assert_eq!(t.to_lowercase(), t.clone());
        }
    }

    #[test]
    fn identifier_parts_cover_the_identifier(s in "[A-Za-z][A-Za-z0-9_]{0,30}") {
        let mut parts = String::new();
        split_identifier(&s, &mut |a, b| parts.push_str(&s[a..b]));
        prop_assert_eq!(parts, s.replace('_', ""));
    }

    #[test]
    fn snake_and_camel_forms_share_parts(words in proptest::collection::vec("[a-z]{3,8}", 2..4)) {
        let snake = words.join("_");
        let camel: String = words
            .iter()
            .enumerate()
            .map(|(i, w)| if i == 0 { w.clone() } else { w[..1].to_uppercase() + &w[1..] })
            .collect();
        let a = tokens(&snake, TokenOptions::TEXT);
        let b = tokens(&camel, TokenOptions::TEXT);
        // Same parts after the whole identifier.
        prop_assert_eq!(&a[1..], &b[1..]);
    }
}
