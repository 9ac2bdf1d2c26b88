//! `subscriptions/listen` (2026-07-28): long-lived requests that receive
//! change notifications, and the registry the server notifies.
//!
//! A listen request names the notification types it wants; the server
//! acknowledges with the subset it can deliver (here only
//! `toolsListChanged`: the tool list changes when the program is reloaded;
//! prompts and resources never change), then sends nothing but what was asked
//! for, every message tagged with the request's id under
//! `io.modelcontextprotocol/subscriptionId`. The subscription lives until the
//! client cancels it (`notifications/cancelled` on stdio, closing the stream
//! on HTTP) or the server ends it with a final result.
//!
//! [`Listeners`] is transport-neutral: the reactor keys each entry by its
//! own notion of a client and asks the registry who must hear of a change.
//!
//! Architecture Invariant: pure; no I/O.

use serde_json::{Map, Value as Json};

use crate::protocol::jsonrpc::{self, ErrorCode, RequestId};

use super::identity::{self, SUBSCRIPTION_KEY};
use super::Catalog;

/// The notification types a subscription receives (only those we can send).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// `notifications/tools/list_changed`.
    pub tools_list_changed: bool,
    /// `taskIds` (Tasks extension): the tasks whose status changes are
    /// sent as `notifications/tasks`.
    pub task_ids: Vec<String>,
}

/// A `subscriptions/listen` request that passed its checks.
#[derive(Clone, Debug, PartialEq)]
pub struct ListenRequest {
    pub id: RequestId,
    pub filter: Filter,
}

/// One open subscription.
#[derive(Clone, Debug, PartialEq)]
pub struct Listener<K> {
    pub client: K,
    pub id: RequestId,
    pub filter: Filter,
}

/// Every open subscription, in the order they were opened.
#[derive(Clone, Debug)]
pub struct Listeners<K> {
    open: Vec<Listener<K>>,
}

impl<K> Default for Listeners<K> {
    fn default() -> Self {
        Listeners { open: Vec::new() }
    }
}

impl<K: Clone + PartialEq> Listeners<K> {
    /// Registers a subscription; one already open for the same client and
    /// id is replaced.
    pub fn add(&mut self, client: K, request: &ListenRequest) {
        self.remove(&client, &request.id);
        self.open.push(Listener {
            client,
            id: request.id.clone(),
            filter: request.filter.clone(),
        });
    }

    /// Ends the subscription `id` of `client`; true if it was open.
    pub fn remove(&mut self, client: &K, id: &RequestId) -> bool {
        let before = self.open.len();
        self.open.retain(|l| !(&l.client == client && &l.id == id));
        self.open.len() != before
    }

    /// Ends every subscription whose client matches, returning them.
    pub fn remove_where(&mut self, mut matches: impl FnMut(&K) -> bool) -> Vec<Listener<K>> {
        let (gone, kept) = std::mem::take(&mut self.open)
            .into_iter()
            .partition(|l| matches(&l.client));
        self.open = kept;
        gone
    }

    /// Whether `client` has the subscription `id` open.
    pub fn contains(&self, client: &K, id: &RequestId) -> bool {
        self.open.iter().any(|l| &l.client == client && &l.id == id)
    }

    /// The notifications a change of the tool list sends, one per
    /// subscription that asked for it.
    pub fn tools_changed(&self) -> Vec<(K, Json)> {
        self.open
            .iter()
            .filter(|l| l.filter.tools_list_changed)
            .map(|l| (l.client.clone(), tools_changed_notification(&l.id)))
            .collect()
    }

    /// `notifications/tasks` for every subscription to task `task_id`;
    /// `task` is the task as `tasks/get` shows it.
    pub fn task_changed(&self, task_id: &str, task: &Map<String, Json>) -> Vec<(K, Json)> {
        self.open
            .iter()
            .filter(|l| l.filter.task_ids.iter().any(|t| t == task_id))
            .map(|l| {
                let mut params = tagged_params(&l.id);
                for (k, v) in task {
                    params.insert(k.clone(), v.clone());
                }
                let note = jsonrpc::notification("notifications/tasks", Json::Object(params));
                (l.client.clone(), note)
            })
            .collect()
    }

    pub fn len(&self) -> usize {
        self.open.len()
    }

    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }
}

/// Reads `params.notifications`. Unknown or unsupported types are simply
/// not acknowledged; a filter of the wrong shape is `-32602`.
pub fn listen_request(id: RequestId, params: Option<&Json>) -> Result<ListenRequest, Json> {
    let invalid = |message: &str| {
        Err(jsonrpc::error_response(
            Some(&id),
            ErrorCode::InvalidParams,
            message,
        ))
    };
    let filter = match params.and_then(|p| p.get("notifications")) {
        None => return invalid("missing 'params.notifications': name the notification types to receive, e.g. {\"toolsListChanged\": true}"),
        Some(Json::Object(f)) => f,
        Some(other) => {
            return invalid(&format!(
                "'params.notifications' must be an object, got {}", crate::format::json::text(other)
            ))
        }
    };
    for flag in [
        "toolsListChanged",
        "promptsListChanged",
        "resourcesListChanged",
    ] {
        if let Some(v) = filter.get(flag) {
            if !v.is_boolean() {
                return invalid(&format!(
                    "'params.notifications.{flag}' must be a boolean, got {}",
                    crate::format::json::text(v)
                ));
            }
        }
    }
    if let Some(uris) = filter.get("resourceSubscriptions") {
        if !uris
            .as_array()
            .is_some_and(|a| a.iter().all(Json::is_string))
        {
            return invalid(&format!(
                "'params.notifications.resourceSubscriptions' must be an array of strings, got {}",
                crate::format::json::text(uris)
            ));
        }
    }
    let task_ids = match filter.get("taskIds") {
        None => Vec::new(),
        Some(Json::Array(ids)) if ids.iter().all(Json::is_string) => ids
            .iter()
            .filter_map(|i| i.as_str().map(str::to_string))
            .collect(),
        Some(other) => {
            return invalid(&format!(
                "'params.notifications.taskIds' must be an array of strings, got {}",
                crate::format::json::text(other)
            ))
        }
    };
    let tools_list_changed = filter.get("toolsListChanged") == Some(&Json::Bool(true));
    Ok(ListenRequest {
        id,
        filter: Filter {
            tools_list_changed,
            task_ids,
        },
    })
}

fn tagged_params(id: &RequestId) -> Map<String, Json> {
    let mut meta = Map::new();
    meta.insert(SUBSCRIPTION_KEY.into(), id.to_json());
    let mut params = Map::new();
    params.insert("_meta".into(), Json::Object(meta));
    params
}

/// `notifications/subscriptions/acknowledged`: the first message of a
/// subscription, with the filter the server will honour.
pub fn acknowledgement(request: &ListenRequest) -> Json {
    let mut params = tagged_params(&request.id);
    let mut honoured = Map::new();
    if request.filter.tools_list_changed {
        honoured.insert("toolsListChanged".into(), Json::Bool(true));
    }
    if !request.filter.task_ids.is_empty() {
        let ids = request.filter.task_ids.iter().cloned().map(Json::String);
        honoured.insert("taskIds".into(), Json::Array(ids.collect()));
    }
    params.insert("notifications".into(), Json::Object(honoured));
    jsonrpc::notification(
        "notifications/subscriptions/acknowledged",
        Json::Object(params),
    )
}

/// `notifications/tools/list_changed` on subscription `id`.
pub fn tools_changed_notification(id: &RequestId) -> Json {
    jsonrpc::notification(
        "notifications/tools/list_changed",
        Json::Object(tagged_params(id)),
    )
}

/// `notifications/cancelled` for subscription `id`: how a stdio server
/// tears a subscription down (the only use servers make of it).
pub fn teardown_notification(id: &RequestId) -> Json {
    let mut params = Map::new();
    params.insert("requestId".into(), id.to_json());
    params.insert(
        "reason".into(),
        Json::String("the server is shutting down".into()),
    );
    jsonrpc::notification("notifications/cancelled", Json::Object(params))
}

/// The response that ends subscription `id` gracefully (server shutdown).
pub fn closing_response(catalog: &Catalog, id: &RequestId) -> Json {
    let mut meta = Map::new();
    meta.insert(SUBSCRIPTION_KEY.into(), id.to_json());
    let mut result = Map::new();
    result.insert("_meta".into(), Json::Object(meta));
    jsonrpc::result_response(id, identity::complete(Json::Object(result), catalog))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn id(n: u32) -> RequestId {
        RequestId::Int(n.to_string())
    }

    #[test]
    fn the_filter_is_read_and_acknowledged() {
        let listen = |p: Json| listen_request(id(1), Some(&p));
        let got = listen(
            json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true}}),
        )
        .unwrap();
        assert!(got.filter.tools_list_changed);
        assert_eq!(
            crate::format::json::text(&acknowledgement(&got)),
            r#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"notifications":{"toolsListChanged":true}}}"#
        );
        let narrow = listen(json!({"notifications": {"promptsListChanged": true}})).unwrap();
        assert_eq!(
            acknowledgement(&narrow)["params"]["notifications"],
            json!({})
        );
        for bad in [
            json!({}),
            json!({"notifications": []}),
            json!({"notifications": {"toolsListChanged": "yes"}}),
            json!({"notifications": {"resourceSubscriptions": [1]}}),
        ] {
            let reply = listen(bad).unwrap_err();
            assert_eq!(jsonrpc::error_code(&reply), Some(-32602));
        }
    }

    #[test]
    fn only_subscribers_to_tool_changes_hear_of_them() {
        let mut all: Listeners<&str> = Listeners::default();
        let tools = Filter {
            tools_list_changed: true,
            task_ids: Vec::new(),
        };
        all.add(
            "a",
            &ListenRequest {
                id: id(1),
                filter: tools.clone(),
            },
        );
        all.add(
            "b",
            &ListenRequest {
                id: id(1),
                filter: Filter::default(),
            },
        );
        all.add(
            "a",
            &ListenRequest {
                id: id(2),
                filter: tools.clone(),
            },
        );
        let sent = all.tools_changed();
        assert_eq!(sent.len(), 2);
        assert_eq!(sent[1].1["params"]["_meta"][SUBSCRIPTION_KEY], json!(2));
        assert!(all.remove(&"a", &id(1)));
        assert!(!all.remove(&"a", &id(1)));
        assert_eq!(all.remove_where(|c| *c == "b").len(), 1);
        assert_eq!(all.len(), 1);
        assert!(all.contains(&"a", &id(2)));
    }
}
