//! The observability options of `mcp` and `router`: `--log-level`,
//! `--log-format` and `--metrics-token` (or `MORLOC_MCP_METRICS_TOKEN`).

use super::{CliError, Settings};
use crate::protocol::log::{Format, Level};

/// The environment variable holding the `/metrics` token when
/// `--metrics-token` is not given.
pub const METRICS_TOKEN_ENV: &str = "MORLOC_MCP_METRICS_TOKEN";

/// The options resolved: the level's default depends on the transport.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObsConfig {
    /// `warn` over stdio (an MCP client shows the server's stderr to its
    /// user: no line per call), `info` over HTTP (an operator wants the
    /// access lines), unless `--log-level`.
    pub log_level: Level,
    pub log_format: Format,
    /// The bearer token `GET /metrics` takes instead of the MCP one.
    pub metrics_token: Option<String>,
}

/// The level and format for the lines written before the command line is
/// parsed and resolved (a usage error, a warning): what `--log-level` and
/// `--log-format` say if their values are found as typed (`--flag value` or
/// `--flag=value`), else `warn` and text.
pub fn early_logging(args: &[std::ffi::OsString]) -> (Level, Format) {
    let (mut level, mut format) = (Level::Warn, Format::Text);
    let mut args = args.iter().filter_map(|a| a.to_str()).peekable();
    while let Some(arg) = args.next() {
        let (flag, value) = match arg.split_once('=') {
            Some((flag, value)) => (flag, Some(value)),
            None => (arg, None),
        };
        if flag != "--log-level" && flag != "--log-format" {
            continue;
        }
        let Some(value) = value.or_else(|| args.peek().copied()) else {
            continue;
        };
        if flag == "--log-level" {
            level = Level::parse(value).unwrap_or(level);
        } else {
            format = Format::parse(value).unwrap_or(format);
        }
    }
    (level, format)
}

/// Resolves the options for a server on HTTP (`http`) or stdio; `env_token`
/// is the value of [`METRICS_TOKEN_ENV`].
pub fn resolve(raw: &Settings, http: bool, env_token: Option<&str>) -> Result<ObsConfig, CliError> {
    let env_token = env_token.filter(|t| !t.is_empty()).map(str::to_string);
    let metrics_token = raw.metrics_token.clone().or(env_token);
    if metrics_token.is_some() && !http && raw.metrics_token.is_some() {
        return Err(CliError::Usage(
            "--metrics-token guards GET /metrics, which is served over HTTP only: add --http-port"
                .into(),
        ));
    }
    Ok(ObsConfig {
        log_level: raw
            .log_level
            .unwrap_or(if http { Level::Info } else { Level::Warn }),
        log_format: raw.log_format,
        metrics_token: metrics_token.filter(|_| http),
    })
}

#[cfg(test)]
mod tests {
    use super::super::settings::flag;
    use super::*;

    fn parsed(pairs: &[(&str, &str)]) -> Result<Settings, CliError> {
        let mut raw = Settings::default();
        for (name, text) in pairs {
            flag(name).unwrap().apply(&mut raw, text)?;
        }
        Ok(raw)
    }

    #[test]
    fn flags_parse_and_refuse_bad_values() {
        let raw = parsed(&[
            ("log-level", "debug"),
            ("log-format", "json"),
            ("metrics-token", "m"),
        ])
        .unwrap();
        assert_eq!(raw.log_level, Some(Level::Debug));
        assert_eq!(raw.log_format, Format::Json);
        assert_eq!(raw.metrics_token.as_deref(), Some("m"));
        for (name, text, says) in [
            (
                "log-level",
                "loud",
                "expected one of error, warn, info, debug",
            ),
            ("log-format", "xml", "expected text or json"),
            ("metrics-token", "", "empty value for '--metrics-token'"),
        ] {
            let err = parsed(&[(name, text)]).unwrap_err();
            assert!(
                matches!(&err, CliError::Usage(m) if m.contains(says)),
                "{err}"
            );
        }
    }

    #[test]
    fn early_logging_reads_the_flags_as_typed() {
        let early = |args: &[&str]| {
            let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
            early_logging(&args)
        };
        assert_eq!(early(&["mcp", "m.json"]), (Level::Warn, Format::Text));
        assert_eq!(
            early(&["mcp", "--log-format", "json", "--bad"]),
            (Level::Warn, Format::Json)
        );
        assert_eq!(
            early(&["mcp", "--log-format=json", "--log-level=error"]),
            (Level::Error, Format::Json)
        );
        assert_eq!(
            early(&["mcp", "--log-format", "xml"]),
            (Level::Warn, Format::Text)
        );
        assert_eq!(early(&["mcp", "--log-format"]), (Level::Warn, Format::Text));
    }

    #[test]
    fn defaults_follow_the_transport() {
        let raw = Settings::default();
        let stdio = resolve(&raw, false, None).unwrap();
        assert_eq!(
            (stdio.log_level, stdio.log_format),
            (Level::Warn, Format::Text)
        );
        let http = resolve(&raw, true, Some("from-env")).unwrap();
        assert_eq!(http.log_level, Level::Info);
        assert_eq!(http.metrics_token.as_deref(), Some("from-env"));
        // The flag wins over the environment; an empty variable is unset.
        let flag = parsed(&[("metrics-token", "flag")]).unwrap();
        let http = resolve(&flag, true, Some("env")).unwrap();
        assert_eq!(http.metrics_token.as_deref(), Some("flag"));
        assert_eq!(resolve(&raw, true, Some("")).unwrap().metrics_token, None);
        // Over stdio the flag is a mistake; the variable is simply unused.
        assert!(resolve(&flag, false, None).is_err());
        assert_eq!(
            resolve(&raw, false, Some("env")).unwrap().metrics_token,
            None
        );
    }
}
