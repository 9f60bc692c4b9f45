"""API keys: only a hash is stored; tokens verify until revoked."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from tm_guide.errors import Conflict, InvalidInput, NotFound, Unauthorized
from tm_guide.store import Store


def test_create_verify_revoke(store: Store) -> None:
    key, token = store.create_api_key("cat-tool", {"ui": "write", "*": "read"})
    assert key.scopes == {"ui": "write", "*": "read"} and key.active
    assert store.verify_api_key(token) == key
    assert key.allows("ui", "write") and key.allows("docs", "read")
    assert not key.allows("docs", "write")

    with pytest.raises(Unauthorized):
        store.verify_api_key(token + "x")
    store.revoke_api_key("cat-tool")
    with pytest.raises(Unauthorized):
        store.verify_api_key(token)
    [listed] = store.list_api_keys()
    assert listed.name == "cat-tool" and listed.revoked_at is not None
    with pytest.raises(NotFound):
        store.revoke_api_key("cat-tool")


def test_token_is_never_stored(store: Store) -> None:
    _, token = store.create_api_key("k", {"*": "read"})
    with store.engine.connect() as conn:
        rows = [tuple(map(str, row)) for row in conn.execute(text("SELECT * FROM api_keys"))]
    assert rows and not any(token in value for row in rows for value in row)


def test_tokens_differ_and_names_are_unique(store: Store) -> None:
    _, first = store.create_api_key("a", {"*": "read"})
    _, second = store.create_api_key("b", {"*": "read"})
    assert first != second
    with pytest.raises(Conflict):
        store.create_api_key("a", {"*": "write"})
    store.revoke_api_key("a")
    _, third = store.create_api_key("a", {"*": "write"})  # a revoked name may be reused
    assert store.verify_api_key(third).scopes == {"*": "write"}


def test_bad_scopes_are_refused(store: Store) -> None:
    with pytest.raises(InvalidInput):
        store.create_api_key("k", {"ui": "admin"})
    with pytest.raises(InvalidInput):
        store.create_api_key("k", {})


def test_cached_keys_are_trusted_for_key_cache_s_and_revoked_at_once_here(
    db_url: str, index_dir
) -> None:
    """A worker trusts a key it verified for `key_cache_s`: another process's revocation takes
    effect when that ends; its own at once."""
    import time

    from tm_guide.store import StoreOptions

    with (
        Store.open(db_url, index_dir, StoreOptions(key_cache_s=0.5)) as worker,
        Store.open(db_url, index_dir) as admin,
    ):
        _, token = admin.create_api_key("editor", {"*": "write"})
        _, other = admin.create_api_key("other", {"*": "read"})
        assert worker.verify_api_key(token).name == "editor"
        admin.revoke_api_key("editor")
        assert worker.verify_api_key(token).name == "editor"  # within the cache time
        time.sleep(0.6)
        with pytest.raises(Unauthorized):
            worker.verify_api_key(token)
        assert worker.verify_api_key(other).name == "other"
        worker.revoke_api_key("other")
        with pytest.raises(Unauthorized):
            worker.verify_api_key(other)
        with pytest.raises(Unauthorized):  # a failed lookup is never cached as a success
            worker.verify_api_key(token)
