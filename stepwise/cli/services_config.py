"""The TOML file `stepwise services up` reads, and the parts it builds from it.

    queue = "redis://127.0.0.1:6379/0"    # or "simple": everything in one process
    stream_prefix = "stepwise:"           # optional (Redis key prefix)

    [control_plane]                       # host, port, db (SQLite; ":memory:" by default;
                                          # or "postgresql://..." that several control
                                          # planes share), hop_timeout (seconds)
    port = 8100                           # or url = "http://..." to join one running elsewhere

    [orchestrator]
    kind = "agent"                        # an LLM picks each service ...
    model = "demo"                        # ... "demo" (scripted router) or "openai:gpt-4o-mini"
    # kind = "pipeline"; services = ["first", "second"]

    [[services]]                          # kind = "agent" (default), "human" or "tool"
    name = "secret_fact_agent"
    agent = "services_agents.py:secret_fact_agent"   # file.py:attr or package.module:attr
    description = "Useful for getting the secret fact."
    replicas = 2                          # processes consuming this service's messages
    model = "demo"                        # the model the agent factory gets
    store = "stepwise.db"                 # its Stepwise tasks (the app's database to open them)

Relative paths (agent files, tools modules, databases) are read from the config file's
folder. Errors are `UserError`s that name the key to fix.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_core.errors import UserError
from agent_core.host import is_url, open_store
from agent_core.llms.base import LLM
from agent_core.llms.catalog import infer_model, split_model
from agent_core.spec import AgentSpec
from agent_core.store import InMemoryStore, Store
from agent_core.user_code.registry import UserCodeRegistry
from stepwise.http.settings import api_token
from stepwise.services import (
    AgentOrchestrator,
    AgentService,
    BaseMessageQueue,
    ControlPlaneServer,
    HumanService,
    PipelineOrchestrator,
    RedisStreamsMessageQueue,
    SimpleMessageQueue,
    ToolService,
)
from stepwise.services.control_plane.database import is_database_url
from stepwise.services.demo import demo_router_llm
from stepwise.services.errors import InvalidServiceNameError
from stepwise.services.names import check_service_name
from stepwise.services.orchestrators.base import BaseOrchestrator
from stepwise.services.services.base import BaseService

__all__ = ["CONTROL_PLANE_PART", "ServiceEntry", "ServicesConfig", "load_config"]

CONTROL_PLANE_PART = "control_plane"
"""The name of the control plane's process (services are named after themselves)."""
_KINDS = ("agent", "human", "tool")


@dataclass(frozen=True)
class ServiceEntry:
    """One `[[services]]` table."""

    name: str
    kind: str
    description: str
    replicas: int = 1
    agent: str | None = None
    tools: str | None = None
    model: str = "demo"
    store: str | None = None


@dataclass(frozen=True)
class ServicesConfig:
    """A whole services file, checked."""

    path: Path
    queue: str
    stream_prefix: str
    host: str
    port: int
    db: str
    external_url: str | None
    orchestrator: dict[str, Any]
    hop_timeout: float = 120.0
    services: list[ServiceEntry] = field(default_factory=list)

    @property
    def folder(self) -> Path:
        """The config file's folder: relative paths are read from here."""
        return self.path.parent

    @property
    def in_process(self) -> bool:
        """Whether the queue lives in one process (`simple`), so every part runs there."""
        return self.queue == "simple"

    @property
    def control_plane_url(self) -> str:
        """Where services register and clients connect."""
        return self.external_url or f"http://{self.host}:{self.port}"

    @property
    def token(self) -> str | None:
        """The control plane's token (`$STEPWISE_API_TOKEN`), if set."""
        return api_token()

    def service(self, name: str) -> ServiceEntry:
        """The `[[services]]` entry named `name`."""
        for entry in self.services:
            if entry.name == name:
                return entry
        raise UserError(f"{self.path} has no service named {name!r}")

    def build_queue(self) -> BaseMessageQueue:
        """The message queue the file names."""
        if self.in_process:
            return SimpleMessageQueue()
        # The token signs every message, so a Redis writer without it cannot forge one.
        return RedisStreamsMessageQueue(
            self.queue, stream_prefix=self.stream_prefix, signing_token=self.token
        )

    def build_control_plane(self, queue: BaseMessageQueue) -> ControlPlaneServer:
        """The control plane, with its orchestrator."""
        return ControlPlaneServer(
            message_queue=queue,
            orchestrator=self._orchestrator(),
            db=self._db_target(),
            host=self.host,
            port=self.port,
            token=self.token,
            hop_timeout=self.hop_timeout,
        )

    def build_service(self, entry: ServiceEntry, queue: BaseMessageQueue) -> BaseService:
        """One service of the file, on `queue`."""
        common = {"service_name": entry.name, "description": entry.description}
        if entry.kind == "human":
            return HumanService(queue, **common)
        registry = UserCodeRegistry(project=self.folder)
        if entry.kind == "tool":
            assert entry.tools is not None
            return ToolService(queue, registry.tools_for(entry.name, module=entry.tools), **common)
        assert entry.agent is not None
        provider, model = _split_model(entry.model, where=f"service {entry.name!r}")
        spec = AgentSpec(
            name=entry.name, agent=entry.name, agent_target=entry.agent,
            provider=provider, model=model or "",  # type: ignore[arg-type]
        )  # fmt: skip
        store = self._store(entry.store) if entry.store else InMemoryStore()
        runner = spec.build_runner(store=store, registry=registry)
        return AgentService(runner, queue, **common)

    def _store(self, target: str) -> Store:
        """A service's task store: a postgresql:// URL as given, a path beside this file."""
        return open_store(target if is_url(target) else self._path(target))

    def _orchestrator(self) -> BaseOrchestrator:
        if self.orchestrator.get("kind", "agent") == "pipeline":
            return PipelineOrchestrator(list(self.orchestrator["services"]))
        return AgentOrchestrator(llm=_model(str(self.orchestrator.get("model", "demo"))))

    def _db_target(self) -> str:
        """`db` as given when it is ":memory:" or a URL, else its file from the config's folder."""
        return self.db if self.db == ":memory:" or is_database_url(self.db) else self._path(self.db)

    def _path(self, value: str) -> str:
        return str((self.folder / value).resolve())


def _model(setting: str) -> LLM:
    if setting == "demo":
        return demo_router_llm()
    _split_model(setting, where="[orchestrator]")
    return infer_model(setting)


def _split_model(setting: str, *, where: str) -> tuple[str, str | None]:
    try:
        return split_model(setting)
    except UserError as exc:
        raise UserError(f"{where}: model = {setting!r}: {exc}") from None


def _require(table: dict[str, Any], key: str, where: str) -> Any:
    if key not in table:
        raise UserError(f"{where} needs `{key}`")
    return table[key]


def _service_entry(table: dict[str, Any], where: str) -> ServiceEntry:
    name = _require(table, "name", where)
    try:
        check_service_name(name)
    except InvalidServiceNameError as exc:
        raise UserError(f"{where}: {exc.message}", hint=exc.hint) from None
    kind = str(table.get("kind", "agent"))
    if kind not in _KINDS:
        raise UserError(f"{where}: kind = {kind!r} is not one of {', '.join(_KINDS)}")
    if kind == "agent":
        _require(table, "agent", f"{where} (an agent service)")
    if kind == "tool":
        _require(table, "tools", f"{where} (a tool service)")
    replicas = table.get("replicas", 1)
    if not isinstance(replicas, int) or replicas < 1:
        raise UserError(f"{where}: replicas must be a whole number of at least 1")
    return ServiceEntry(
        name=name, kind=kind, description=str(table.get("description", f"The {name} service.")),
        replicas=replicas, agent=table.get("agent"), tools=table.get("tools"),
        model=str(table.get("model", "demo")), store=table.get("store"),
    )  # fmt: skip


def _orchestrator_table(table: dict[str, Any], names: list[str], path: Path) -> dict[str, Any]:
    kind = table.get("kind", "agent")
    if kind not in ("agent", "pipeline"):
        raise UserError(f'{path}: [orchestrator] kind must be "agent" or "pipeline"')
    if kind == "pipeline":
        order = _require(table, "services", f"{path}: a pipeline [orchestrator]")
        missing = [name for name in order if name not in names]
        if not order or missing:
            raise UserError(f"{path}: the pipeline names services not in [[services]]: {missing}")
    return dict(table)


def load_config(path: str | Path) -> ServicesConfig:
    """Read and check a services file.

    Raises:
        UserError: The file is missing, is not TOML, or a key is wrong (the message says which).
    """
    path = Path(path).expanduser().resolve()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"no services file at {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path} is not valid TOML: {exc}") from None
    queue = str(data.get("queue", "simple"))
    if queue != "simple" and not queue.startswith(("redis://", "rediss://", "unix://")):
        raise UserError(f'{path}: queue must be "simple" or a redis:// URL, not {queue!r}')
    services = [
        _service_entry(table, f"{path}: [[services]] #{number}")
        for number, table in enumerate(data.get("services", []), start=1)
    ]
    names = [entry.name for entry in services]
    if len(set(names)) != len(names):
        raise UserError(f"{path}: each service needs its own name ({', '.join(names)})")
    plane = data.get("control_plane", {})
    hop_timeout = plane.get("hop_timeout", 120.0)
    if not isinstance(hop_timeout, int | float) or hop_timeout <= 0:
        raise UserError(f"{path}: [control_plane] hop_timeout must be a positive number of seconds")
    return ServicesConfig(
        path=path, queue=queue, stream_prefix=str(data.get("stream_prefix", "stepwise:")),
        host=str(plane.get("host", "127.0.0.1")), port=int(plane.get("port", 8100)),
        db=str(plane.get("db", ":memory:")), external_url=plane.get("url"),
        orchestrator=_orchestrator_table(data.get("orchestrator", {}), names, path),
        services=services, hop_timeout=float(hop_timeout),
    )  # fmt: skip
