//! The OAuth options of `mcp` and `router` (`--oauth-*`) and
//! `--public-url`, parsed apart from the other serving options and checked
//! together: an issuer needs a key set and the other way round, the key set
//! is a file or an `http://` URL, and everything needs HTTP.

use std::path::PathBuf;
use std::time::Duration;

use super::{CliError, Settings};
use crate::protocol::oauth::fetch::Url;

/// How long fetched keys are used before they are fetched again, unless
/// `--oauth-jwks-max-age`.
pub const DEFAULT_JWKS_MAX_AGE: Duration = Duration::from_secs(3600);

/// Where the issuer's keys come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JwksSource {
    File(PathBuf),
    Url(Url),
}

/// The resource server's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthConfig {
    pub issuer: String,
    /// `None`: the server's canonical URL (`--public-url`, else the URL it
    /// listens on), known once bound.
    pub audience: Option<String>,
    pub jwks: JwksSource,
    pub scopes: Vec<String>,
    pub tool_scopes: Vec<(String, Vec<String>)>,
    /// Keys older than this are fetched (or read) again before use.
    pub jwks_max_age: Duration,
}

/// The checked settings: `None` without `--oauth-issuer`.
#[cfg(not(feature = "oauth"))]
pub(super) fn config(raw: &Settings, http: bool) -> Result<Option<OAuthConfig>, CliError> {
    let given = raw.oauth_issuer.is_some()
        || raw.oauth_audience.is_some()
        || raw.oauth_jwks.is_some()
        || !raw.oauth_scopes.is_empty()
        || !raw.oauth_tool_scopes.is_empty()
        || raw.oauth_jwks_max_age != DEFAULT_JWKS_MAX_AGE;
    if (given || raw.public_url.is_some()) && !http {
        return Err(CliError::Usage(
            "--public-url and the --oauth-* options need --http-port".into(),
        ));
    }
    if given {
        return Err(CliError::Usage(NO_OAUTH.into()));
    }
    Ok(None)
}

/// Why a build without the `oauth` feature refuses the options.
#[cfg(not(feature = "oauth"))]
const NO_OAUTH: &str = "this build has no OAuth support (it was built without the `oauth` feature: `cargo build --no-default-features`); use a default build (`make build` or `make static`)";

/// The checked settings: `None` without `--oauth-issuer`.
#[cfg(feature = "oauth")]
pub(super) fn config(raw: &Settings, http: bool) -> Result<Option<OAuthConfig>, CliError> {
    let usage = |m: &str| Err(CliError::Usage(m.to_string()));
    let given = raw.oauth_issuer.is_some()
        || raw.oauth_audience.is_some()
        || raw.oauth_jwks.is_some()
        || !raw.oauth_scopes.is_empty()
        || !raw.oauth_tool_scopes.is_empty()
        || raw.oauth_jwks_max_age != DEFAULT_JWKS_MAX_AGE;
    if (given || raw.public_url.is_some()) && !http {
        return usage("--public-url and the --oauth-* options need --http-port");
    }
    let (issuer, jwks) = match (&raw.oauth_issuer, &raw.oauth_jwks) {
        (None, _) if !given => return Ok(None),
        (Some(issuer), Some(jwks)) => (issuer.clone(), jwks),
        (None, _) => return usage("the --oauth-* options need --oauth-issuer"),
        (Some(_), None) => {
            return usage("--oauth-issuer needs --oauth-jwks (a file or an http:// URL)")
        }
    };
    let jwks = if jwks.contains("://") {
        JwksSource::Url(Url::parse(jwks).map_err(|e| CliError::Usage(format!("--oauth-jwks {e}")))?)
    } else {
        JwksSource::File(PathBuf::from(jwks))
    };
    Ok(Some(OAuthConfig {
        issuer,
        audience: raw.oauth_audience.clone(),
        jwks,
        scopes: raw.oauth_scopes.clone(),
        tool_scopes: raw.oauth_tool_scopes.clone(),
        jwks_max_age: raw.oauth_jwks_max_age,
    }))
}

#[cfg(test)]
mod tests {
    use std::ffi::{OsStr, OsString};

    use super::super::{parse_args, RawArgs};
    use super::*;

    fn raw(line: &str) -> Result<Settings, CliError> {
        let args = line.split_whitespace().map(OsString::from);
        match parse_args(Some(OsStr::new("morloc-mcp")), args)? {
            RawArgs::Serve(serve) => Ok(serve.settings),
            other => panic!("not a serve command: {other:?}"),
        }
    }

    fn usage(line: &str, http: bool) -> String {
        match raw(line).and_then(|r| config(&r, http)) {
            Err(CliError::Usage(m)) => m,
            other => panic!("expected a usage error for {line}, got {other:?}"),
        }
    }

    #[test]
    fn the_options_parse_and_are_checked_together() {
        let r = raw(
            "mcp m --oauth-issuer https://i/ --oauth-jwks http://127.0.0.1:9/k \
                     --oauth-scopes a,b --oauth-scopes c --oauth-tool-scopes t=x,y \
                     --public-url https://h/mcp",
        )
        .unwrap();
        assert_eq!(r.oauth_scopes, ["a", "b", "c"]);
        assert_eq!(
            r.oauth_tool_scopes,
            [("t".to_string(), vec!["x".to_string(), "y".to_string()])]
        );
        assert_eq!(r.public_url.as_deref(), Some("https://h/mcp"));
        if cfg!(feature = "oauth") {
            let c = config(&r, true).unwrap().unwrap();
            assert_eq!(c.issuer, "https://i/");
            assert!(matches!(c.jwks, JwksSource::Url(ref u) if u.path == "/k"));
            let file = raw("mcp m --oauth-issuer i --oauth-jwks keys.json").unwrap();
            let c = config(&file, true).unwrap().unwrap();
            assert_eq!(c.jwks, JwksSource::File("keys.json".into()));
            assert!(usage("mcp m --oauth-issuer i", true).contains("--oauth-jwks"));
            assert!(usage("mcp m --oauth-issuer i --oauth-jwks https://i/k", true).contains("TLS"));
            assert!(usage("mcp m --oauth-scopes a", true).contains("--oauth-issuer"));
        } else {
            assert!(usage("mcp m --oauth-issuer i --oauth-jwks k", true).contains("feature"));
        }
        assert_eq!(config(&raw("mcp m").unwrap(), false).unwrap(), None);
        assert!(usage("mcp m --public-url https://h/mcp", false).contains("--http-port"));
        assert!(usage("mcp m --public-url h", true).contains("http://"));
        assert!(usage("mcp m --oauth-tool-scopes t", true).contains("TOOL=SCOPE"));
        assert!(usage("mcp m --oauth-tool-scopes t=", true).contains("TOOL=SCOPE"));
    }
}
