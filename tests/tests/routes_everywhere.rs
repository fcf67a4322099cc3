//! One route table (`mq_http::routes`), and the places that must agree with it: the SAM
//! template's HTTP API events and the OpenAPI document name the same (method, path) pairs as the
//! table (which the local gateway serves), every function the template builds is a binary of
//! the workspace, and each HTTP function serves the row of its event. The dashboard's page
//! routes (`mq_http::pages::PAGE_ROUTES`) are in the template and the gateway but not in the
//! API document, and their function serves the pages.

use serde_json::Value as Json;
use serde_norway::Value as Yaml;
use std::collections::BTreeSet;
use std::path::Path;

type Endpoints = BTreeSet<(String, String)>;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

fn template() -> Yaml {
    serde_norway::from_str(mq_tables::schema::TEMPLATE).expect("template.yaml parses")
}

/// The functions of the template: (logical id, resource).
fn functions(template: &Yaml) -> Vec<(String, Yaml)> {
    template["Resources"]
        .as_mapping()
        .unwrap()
        .iter()
        .filter(|(_, r)| r["Type"].as_str() == Some("AWS::Serverless::Function"))
        .map(|(id, r)| (id.as_str().unwrap().to_owned(), r.clone()))
        .collect()
}

fn template_endpoints() -> Endpoints {
    let mut found = Endpoints::new();
    for (_, function) in functions(&template()) {
        let Some(events) = function["Properties"]["Events"].as_mapping() else {
            continue;
        };
        for (_, event) in events {
            if event["Type"].as_str() == Some("HttpApi") {
                let p = &event["Properties"];
                found.insert((
                    p["Method"].as_str().unwrap().to_uppercase(),
                    p["Path"].as_str().unwrap().to_owned(),
                ));
            }
        }
    }
    found
}

fn gateway_endpoints() -> Endpoints {
    mq_http::routes::ROUTES
        .iter()
        .map(|r| (r.method.to_string(), r.path()))
        .collect()
}

/// The dashboard's page routes, as the template names them.
fn page_endpoints() -> Endpoints {
    mq_http::pages::PAGE_ROUTES
        .iter()
        .map(|p| (p.method.to_string(), p.path.to_owned()))
        .collect()
}

/// The document's operations, except the document itself (served by the gateway only).
fn openapi_endpoints() -> Endpoints {
    let text = std::fs::read_to_string(root().join("openapi/openapi.json")).unwrap();
    let doc: Json = serde_json::from_str(&text).unwrap();
    let mut found = Endpoints::new();
    for (path, operations) in doc["paths"].as_object().unwrap() {
        for method in operations.as_object().unwrap().keys() {
            found.insert((method.to_uppercase(), format!("/v1{path}")));
        }
    }
    found.remove(&("GET".to_owned(), "/v1/openapi.json".to_owned()));
    found
}

#[test]
fn the_template_the_gateway_and_the_openapi_document_name_the_same_endpoints() {
    let mut template = template_endpoints();
    let pages = page_endpoints();
    assert_eq!(
        template.len(),
        mq_http::routes::ROUTES.len() + pages.len(),
        "{template:?}"
    );
    for page in &pages {
        assert!(
            template.remove(page),
            "the template has no event for {page:?}"
        );
    }
    assert_eq!(gateway_endpoints(), template, "route table vs template");
    assert_eq!(openapi_endpoints(), template, "openapi.json vs template");
}

/// `[[bin]] name = "..."` of every package under `functions/`.
fn function_binaries() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for dir in std::fs::read_dir(root().join("functions")).unwrap() {
        names.extend(binaries_in(&dir.unwrap().path()));
    }
    names
}

/// The `[[bin]]` names of the package in `dir`.
fn binaries_in(dir: &Path) -> Vec<String> {
    let manifest = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    text.split("[[bin]]")
        .skip(1)
        .map(|section| {
            let name = section
                .lines()
                .find_map(|l| l.trim().strip_prefix("name = "))
                .expect("a [[bin]] has a name");
            name.trim_matches('"').to_owned()
        })
        .collect()
}

#[test]
fn every_function_of_the_template_is_a_binary_of_the_workspace() {
    let built: BTreeSet<String> = functions(&template())
        .iter()
        .map(|(id, f)| {
            f["Metadata"]["BuildProperties"]["Binary"]
                .as_str()
                .unwrap_or_else(|| panic!("{id} names no binary"))
                .to_owned()
        })
        .collect();
    assert_eq!(built, function_binaries());
}

/// SAM builds a function where its `CodeUri` points. From the workspace's root, cargo would
/// resolve features for every member at once: the admin tool's and the local gateway's (SSO
/// credentials, an HTTP server, full regex) would end up in every function, about 1 MB more
/// each. From the function's own package directory, only its dependencies count.
#[test]
fn every_function_is_built_from_its_own_package_directory() {
    for (id, f) in functions(&template()) {
        let binary = f["Metadata"]["BuildProperties"]["Binary"]
            .as_str()
            .unwrap_or_else(|| panic!("{id} names no binary"));
        let code_uri = f["Properties"]["CodeUri"]
            .as_str()
            .unwrap_or_else(|| panic!("{id} has no CodeUri"));
        assert_eq!(
            binaries_in(&root().join(code_uri)),
            [binary],
            "{id}: the package at CodeUri {code_uri} is not the one of {binary}"
        );
    }
}

/// The `static` of `mq_http::routes` a route is declared as: its name in upper snake case.
fn static_name(name: &str) -> String {
    let mut out = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        match c {
            '-' | '/' => out.push('_'),
            c if c.is_ascii_uppercase() && previous_lower => {
                out.push('_');
                out.push(c);
            }
            c => out.push(c.to_ascii_uppercase()),
        }
        previous_lower = c.is_ascii_lowercase();
    }
    out
}

/// Each function the template routes an HTTP event to serves that event's row of the route
/// table: its `main` names the row's `static`, and the row has the event's method.
#[test]
fn every_http_function_serves_the_route_of_its_event() {
    let mut served = 0;
    let mut pages = 0;
    for (id, f) in functions(&template()) {
        let Some(events) = f["Properties"]["Events"].as_mapping() else {
            continue;
        };
        for (_, event) in events.iter().filter(|(_, e)| e["Type"] == "HttpApi") {
            let path = event["Properties"]["Path"].as_str().unwrap();
            let method = event["Properties"]["Method"].as_str().unwrap();
            let code_uri = f["Properties"]["CodeUri"].as_str().unwrap();
            let main = std::fs::read_to_string(root().join(code_uri).join("src/main.rs")).unwrap();
            if let Some(page) = mq_http::pages::PAGE_ROUTES.iter().find(|p| p.path == path) {
                assert_eq!(page.method.as_str(), method.to_uppercase(), "{id}");
                assert!(
                    main.contains("mq_lambda::run_pages()"),
                    "{id} ({code_uri}) serves {path} but does not call run_pages"
                );
                pages += 1;
                continue;
            }
            let name = path.strip_prefix("/v1/").unwrap();
            let route = mq_http::routes::route(name).unwrap_or_else(|| panic!("{id}: no {path}"));
            assert_eq!(route.method.as_str(), method.to_uppercase(), "{id}");
            let serves = format!("run_route(&mq_http::routes::{})", static_name(name));
            assert!(
                main.contains(&serves),
                "{id} ({code_uri}) does not call {serves}"
            );
            served += 1;
        }
    }
    assert_eq!(served, mq_http::routes::ROUTES.len());
    assert_eq!(pages, mq_http::pages::PAGE_ROUTES.len());
}
