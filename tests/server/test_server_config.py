"""Server settings from the environment, and the deployments `tm-guide serve` refuses to run."""

from __future__ import annotations

import dataclasses

import pytest

from tm_guide.config import Settings
from tm_guide.errors import InvalidInput
from tm_guide.model.card import ModelCard
from tm_guide.server.config import ServerConfig
from tm_guide.server.serving import GunicornServer, ServeOptions, check_deployment
from tm_guide.server.translation import MTOptions, translate_options


def test_limits_and_switches_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TM_GUIDE_MAX_BATCH_SIZE", "8")
    monkeypatch.setenv("TM_GUIDE_AUTH", "off")
    config = ServerConfig.from_env(Settings())
    assert config.limits.max_batch_size == 8 and config.auth_enabled is False


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("TM_GUIDE_MAX_BATCH_SIZE", "eight", "TM_GUIDE_MAX_BATCH_SIZE must be a whole number, not"),
        ("TM_GUIDE_MAX_BATCH_SIZE", "0", "TM_GUIDE_MAX_BATCH_SIZE must be at least 1, not 0"),
        ("TM_GUIDE_BATCH_WAIT_MS", "soon", "TM_GUIDE_BATCH_WAIT_MS must be a number, not 'soon'"),
        ("TM_GUIDE_BATCH_WAIT_MS", "-1", "TM_GUIDE_BATCH_WAIT_MS must be between 0 and"),
    ],
)
def test_a_malformed_number_setting_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(InvalidInput, match=message) as caught:
        ServerConfig.from_env(Settings())
    assert caught.value.field == name


def test_micro_batching_settings_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert ServerConfig.from_env(Settings()).compute.batching
    monkeypatch.setenv("TM_GUIDE_BATCH_MAX_SENTENCES", "1")
    monkeypatch.setenv("TM_GUIDE_BATCH_WAIT_MS", "2.5")
    monkeypatch.setenv("TM_GUIDE_COMPUTE_THREADS", "0")
    monkeypatch.setenv("TM_GUIDE_DECODERS", "2")
    compute = ServerConfig.from_env(Settings()).compute
    assert not compute.batching and compute.batch_wait_ms == 2.5 and compute.decoders == 2
    assert compute.resolved_threads >= 1  # 0 = the CPUs the process may use


def test_decoding_engine_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ServerConfig.from_env(Settings()).compute.engine == "auto"
    monkeypatch.setenv("TM_GUIDE_ENGINE", "rerank")
    monkeypatch.setenv("TM_GUIDE_COMPUTE_THREADS", "1")
    compute = ServerConfig.from_env(Settings()).compute
    options = translate_options(MTOptions(lam=1.5), 10, [3], compute)
    assert (options.engine.engine, options.engine.threads, options.search.lam) == ("rerank", 1, 1.5)
    assert options.memory_ids == (3,)


def test_default_lambda_comes_from_the_environment_else_the_model_card(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tuned = ModelCard(name="m", source_lang="en", target_lang="de", guided_lambda=3.0)
    untuned = ModelCard(name="m", source_lang="en", target_lang="de")
    compute = ServerConfig.from_env(Settings()).compute
    assert translate_options(MTOptions(), 10, [1], compute, untuned).search.lam == 1.0
    assert translate_options(MTOptions(), 10, [1], compute, tuned).search.lam == 3.0
    monkeypatch.setenv("TM_GUIDE_LAMBDA", "2")
    compute = ServerConfig.from_env(Settings()).compute
    assert translate_options(MTOptions(), 10, [1], compute, tuned).search.lam == 2.0
    assert (
        translate_options(MTOptions(lam=0.0), 10, [1], compute, tuned).search.lam == 0.0
    )  # request


def test_piece_reward_rule_comes_from_the_request_else_the_model_card() -> None:
    once = ModelCard(
        name="m", source_lang="en", target_lang="de", guided_lambda=6.0, guided_reward_repeats=False
    )
    untuned = ModelCard(name="m", source_lang="en", target_lang="de")
    compute = ServerConfig.from_env(Settings()).compute
    assert translate_options(MTOptions(), 10, [1], compute, untuned).search.reward_repeats is True
    chosen = translate_options(MTOptions(), 10, [1], compute, once)
    assert (chosen.search.reward_repeats, chosen.search.lam) == (False, 6.0)
    asked = translate_options(MTOptions(reward_repeats=True), 10, [1], compute, once)
    assert asked.search.reward_repeats is True  # the request's own choice
    assert not chosen.pieces.clipped and chosen.pieces.weighting.rule == "linear"
    tuned = dataclasses.replace(once, guided_clipped=True, guided_weighting="power:2")
    served = translate_options(MTOptions(), 10, [1], compute, tuned)
    assert served.pieces.clipped and served.pieces.weighting.power == 2.0
    mine = translate_options(MTOptions(clipped=False, weighting="linear"), 10, [1], compute, tuned)
    assert not mine.pieces.clipped and mine.pieces.weighting.rule == "linear"
    assert served.pieces.repair.threshold is None  # no repair unless the card or request says
    repairing = dataclasses.replace(tuned, guided_repair="0.7:1:1")
    assert translate_options(MTOptions(), 10, [1], compute, repairing).pieces.repair.spec == (
        "0.7:1:1"
    )
    off = translate_options(MTOptions(repair="off"), 10, [1], compute, repairing)
    assert off.pieces.repair.threshold is None


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("TM_GUIDE_AUTH", "maybe"),
        ("TM_GUIDE_MAX_BODY_BYTES", "lots"),
        ("TM_GUIDE_MAX_BATCH_SIZE", "0"),
        ("TM_GUIDE_BATCH_MAX_SENTENCES", "0"),
        ("TM_GUIDE_BATCH_WAIT_MS", "soon"),
        ("TM_GUIDE_BATCH_WAIT_MS", "-1"),
        ("TM_GUIDE_COMPUTE_THREADS", "-1"),
        ("TM_GUIDE_DECODERS", "0"),
        ("TM_GUIDE_ENGINE", "fastest"),
        ("TM_GUIDE_LAMBDA", "strong"),
        ("TM_GUIDE_LAMBDA", "101"),
    ],
)
def test_bad_setting_is_an_error_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(InvalidInput) as raised:
        ServerConfig.from_env(Settings())
    assert raised.value.field == name and name in raised.value.message


def test_auth_off_is_refused_unless_bound_to_loopback() -> None:
    config = dataclasses.replace(ServerConfig(), auth_enabled=False)
    check_deployment(config, ServeOptions(host="127.0.0.1"))
    check_deployment(config, ServeOptions(host="::1"))
    with pytest.raises(InvalidInput, match="loopback"):
        check_deployment(config, ServeOptions(host="0.0.0.0"))
    check_deployment(ServerConfig(), ServeOptions(host="0.0.0.0"))


def test_several_workers_are_refused_on_sqlite() -> None:
    with pytest.raises(InvalidInput, match="PostgreSQL"):
        check_deployment(ServerConfig(), ServeOptions(workers=2))
    postgres = ServerConfig(settings=Settings(db_url="postgresql+psycopg://db/tm"))
    check_deployment(postgres, ServeOptions(workers=2))


def test_without_auth_loopback_clients_need_no_key(start_server) -> None:
    server = start_server(extra_env={"TM_GUIDE_AUTH": "off"}, admin=False)
    client = server.client.with_token(None)
    created = client.post(
        "/v1/memories", {"name": "mine", "source_lang": "en", "target_lang": "de"}
    )
    assert created.status == 201, created.body
    assert client.get("/v1/memories/mine").status == 200


def test_the_web_console_can_be_turned_off(start_server) -> None:
    server = start_server(extra_env={"TM_GUIDE_UI": "off"})
    page = server.client.get("/ui/")
    assert page.status == 404 and page.json["error"] == "not_found"
    assert server.client.get("/v1/memories").status == 200  # the API is still served


def test_only_the_protocols_named_are_served_each_with_its_errors(start_server) -> None:
    server = start_server(extra_env={"TM_GUIDE_PROTOCOLS": "deepl,libretranslate"})
    client = server.client.with_token(None)
    deepl = client.post("/deepl/v2/translate", {"text": ["Hi"], "target_lang": "DE"})
    assert deepl.status == 403 and set(deepl.json) == {"message"}, deepl.body
    libre = client.post("/libretranslate/translate", {"q": "Hi", "source": "en", "target": "de"})
    assert libre.status == 403 and set(libre.json) == {"error"}, libre.body
    for unserved in ("/modernmt/translate?q=Hi&source=en&target=de", "/tmserver/en/de/unit/Hi"):
        assert client.get(unserved).status == 404


def test_the_server_opens_no_control_socket_at_a_shared_path() -> None:
    """gunicorn's control socket sits at one path per user; two servers would collide there."""
    server = GunicornServer(ServerConfig.from_env(Settings()), ServeOptions())
    if "control_socket_disable" in server.cfg.settings:  # gunicorn >= 25.1
        assert server.cfg.control_socket_disable is True
