//! Enumerations that travel on the wire: emitted in lowercase, accepted in any case.

/// Declares an enum whose values have one canonical lowercase spelling.
///
/// The generated type serialises as that spelling, parses it in any case (`FromStr` and serde),
/// and names the allowed values when parsing fails.
#[macro_export]
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident => $text:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $( $(#[$vmeta])* $variant ),+ }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[ $( $name::$variant ),+ ];

            /// The canonical (lowercase) spelling.
            pub const fn as_str(self) -> &'static str {
                match self { $( $name::$variant => $text ),+ }
            }

            /// The allowed spellings, for error messages: `"a", "b"`.
            pub fn allowed() -> String {
                Self::ALL
                    .iter()
                    .map(|v| format!("\"{}\"", v.as_str()))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::enums::UnknownValue;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str().eq_ignore_ascii_case(s))
                    .ok_or_else(|| $crate::enums::UnknownValue {
                        got: s.chars().take(64).collect(),
                        allowed: Self::allowed(),
                    })
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(d)?;
                s.parse().map_err(::serde::de::Error::custom)
            }
        }
    };
}

/// A value that is not one of an enum's spellings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown value \"{got}\", expected one of {allowed}")]
pub struct UnknownValue {
    pub got: String,
    pub allowed: String,
}

#[cfg(test)]
mod tests {
    wire_enum! {
        pub enum Colour { Red => "red", DarkBlue => "dark_blue" }
    }

    #[test]
    fn accepts_any_case_and_emits_lowercase() {
        assert_eq!("RED".parse::<Colour>().unwrap(), Colour::Red);
        assert_eq!("Dark_Blue".parse::<Colour>().unwrap(), Colour::DarkBlue);
        assert_eq!(
            serde_json::to_string(&Colour::DarkBlue).unwrap(),
            "\"dark_blue\""
        );
        let parsed: Colour = serde_json::from_str("\"DARK_BLUE\"").unwrap();
        assert_eq!(parsed, Colour::DarkBlue);
    }

    #[test]
    fn names_the_allowed_values() {
        let err = "green".parse::<Colour>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown value \"green\", expected one of \"red\", \"dark_blue\""
        );
    }
}
