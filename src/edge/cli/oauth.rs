//! The OAuth options of `mcp` and `router` (`--oauth-*`) and
//! `--public-url`, parsed apart from the other serving options and checked
//! together: an issuer needs a key set and the other way round, the key set
//! is a file or an `http://` URL, and everything needs HTTP.

use std::path::PathBuf;

use super::values::string_value;
use super::CliError;
use crate::protocol::oauth::fetch::Url;

/// The options as given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OAuthArgs {
    pub public_url: Option<String>,
    pub issuer: Option<String>,
    pub audience: Option<String>,
    pub jwks: Option<String>,
    pub scopes: Vec<String>,
    /// `--oauth-tool-scopes TOOL=SCOPE[,SCOPE...]`, in order.
    pub tool_scopes: Vec<(String, Vec<String>)>,
}

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
}

/// The options parsed here (without `--`).
pub(super) const FLAGS: [&str; 6] = [
    "public-url",
    "oauth-issuer",
    "oauth-audience",
    "oauth-jwks",
    "oauth-scopes",
    "oauth-tool-scopes",
];

/// Takes option `name`, one of [`FLAGS`].
pub(super) fn flag(
    name: &str,
    parser: &mut lexopt::Parser,
    raw: &mut OAuthArgs,
    command: &str,
) -> Result<(), CliError> {
    let option = format!("--{name}");
    let mut value = || -> Result<String, CliError> {
        let text = string_value(parser, &option, command)?;
        if text.trim().is_empty() {
            return Err(CliError::Usage(format!("empty value for '{option}'")));
        }
        Ok(text)
    };
    match name {
        "public-url" => {
            let url = value()?;
            if !url.starts_with("http://") && !url.starts_with("https://") {
                return Err(CliError::Usage(format!(
                    "invalid value '{url}' for '--public-url': expected an http:// or https:// URL (the /mcp endpoint as clients reach it)"
                )));
            }
            raw.public_url = Some(url);
        }
        "oauth-issuer" => raw.issuer = Some(value()?),
        "oauth-audience" => raw.audience = Some(value()?),
        "oauth-jwks" => raw.jwks = Some(value()?),
        "oauth-scopes" => raw.scopes.extend(scope_list(&value()?)),
        "oauth-tool-scopes" => {
            let text = value()?;
            let Some((tool, scopes)) = text.split_once('=') else {
                return Err(CliError::Usage(format!(
                    "invalid value '{text}' for '--oauth-tool-scopes': expected TOOL=SCOPE[,SCOPE...]"
                )));
            };
            let scopes = scope_list(scopes);
            if tool.is_empty() || scopes.is_empty() {
                return Err(CliError::Usage(format!(
                    "invalid value '{text}' for '--oauth-tool-scopes': expected TOOL=SCOPE[,SCOPE...]"
                )));
            }
            raw.tool_scopes.push((tool.to_string(), scopes));
        }
        _ => {}
    }
    Ok(())
}

/// Scopes separated by commas or spaces.
fn scope_list(text: &str) -> Vec<String> {
    text.split([',', ' '])
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The checked settings: `None` without `--oauth-issuer`.
pub(super) fn config(raw: &OAuthArgs, http: bool) -> Result<Option<OAuthConfig>, CliError> {
    let usage = |m: &str| Err(CliError::Usage(m.to_string()));
    let given = raw.issuer.is_some()
        || raw.audience.is_some()
        || raw.jwks.is_some()
        || !raw.scopes.is_empty()
        || !raw.tool_scopes.is_empty();
    if (given || raw.public_url.is_some()) && !http {
        return usage("--public-url and the --oauth-* options need --http-port");
    }
    let (issuer, jwks) = match (&raw.issuer, &raw.jwks) {
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
        audience: raw.audience.clone(),
        jwks,
        scopes: raw.scopes.clone(),
        tool_scopes: raw.tool_scopes.clone(),
    }))
}
