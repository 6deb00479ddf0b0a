//! `ag_ui::Patcher`: each flush's JSON Patch, applied strictly with the `json-patch` crate
//! to the previous snapshot, gives the new snapshot.

use chord::ag_ui::Patcher;
use chord::{path, Op};
use serde_json::json;

#[test]
fn push_is_an_add_at_the_end() {
    let mut patcher = Patcher::new(json!({"xs": [1]}));
    let delta = patcher.patch(&[Op::Set(path!["xs", 1], json!(2))]).unwrap();
    assert_eq!(
        serde_json::to_value(&delta).unwrap(),
        json!([{"op": "add", "path": "/xs/-", "value": 2}])
    );
}
