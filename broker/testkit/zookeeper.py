"""A real ZooKeeper server on a free loopback port, for tests: the cluster fixture (broker.testkit.cluster)
starts one when it is not given an address. It needs Java; the ZooKeeper jars are found where a user has them:

1. `MINIBROKER_ZOOKEEPER_JARS`: a Java classpath (entries separated by `:`; `dir/*` takes a folder's jars);
2. `ZOOKEEPER_HOME`: an unpacked ZooKeeper release (its `lib/*.jar`);
3. Debian's and Ubuntu's `zookeeper` package (`/usr/share/java/zookeeper.jar`), Homebrew's `zookeeper` formula
   (`$(brew --prefix)/opt/zookeeper/libexec`);
4. otherwise ZooKeeper ZOOKEEPER_VERSION's jars fetched from Maven Central into the user's cache, once
   (broker.testkit.jars: the way the test kit fetches every jar; Maven must be installed).

`MINIBROKER_ZOOKEEPER=maven` skips 1-3 and takes the fetched release. `find()` says which, or raises
`ZooKeeperUnavailable` with what to install.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

# The release Kafka 3.9 (the last with ZooKeeper mode, minibroker's default profile) ships with, and what its
# server needs at run time that its POM leaves optional (metrics, snappy: as in its release tarball's lib/).
ZOOKEEPER_VERSION = "3.8.4"
MAVEN_ARTIFACTS = (f"org.apache.zookeeper:zookeeper:{ZOOKEEPER_VERSION}", "io.dropwizard.metrics:metrics-core:4.1.12.1",
                   "org.xerial.snappy:snappy-java:1.1.10.5")
DEBIAN_JAR = Path("/usr/share/java/zookeeper.jar")
DEBIAN_CONF = Path("/etc/zookeeper/conf")
HOMEBREW_HOMES = (Path("/opt/homebrew/opt/zookeeper/libexec"), Path("/usr/local/opt/zookeeper/libexec"),
                  Path("/home/linuxbrew/.linuxbrew/opt/zookeeper/libexec"))
JAVA_HINT = "Debian/Ubuntu: apt-get install default-jre-headless; Fedora: dnf install java-21-openjdk-headless; " \
            "macOS: brew install openjdk"


class ZooKeeperUnavailable(RuntimeError):
    """No ZooKeeper can be run here; the message says what to install or set."""


@dataclass(frozen=True)
class ZooKeeperInstall:
    """How to run ZooKeeper here: the java command, the classpath, and where the jars came from."""

    java: str
    classpath: str
    origin: str  # "MINIBROKER_ZOOKEEPER_JARS", "ZOOKEEPER_HOME", "debian", "homebrew" or "maven"


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise ZooKeeperUnavailable(f"Java is not installed: ZooKeeper (the cluster fixture's) runs on a JVM, 11 "
                                   f"or newer ({JAVA_HINT}; or set JAVA_HOME)")
    return found


def _home_classpath(home: Path) -> str | None:
    jars = sorted(home.glob("lib/*.jar")) + sorted(home.glob("zookeeper-*.jar"))
    if not any(j.name.startswith("zookeeper-") for j in jars):
        return None
    conf = [str(home / "conf")] if (home / "conf").is_dir() else []
    return os.pathsep.join(conf + [str(j) for j in jars])


def _maven_classpath() -> str:
    from broker.testkit import jars

    try:
        fetched = jars.fetch(list(MAVEN_ARTIFACTS), f"zookeeper-{ZOOKEEPER_VERSION}")
    except jars.Unavailable as exc:
        raise ZooKeeperUnavailable(
            f"no ZooKeeper installed, and its jars could not be fetched from Maven Central: {exc}. Install "
            "ZooKeeper (Debian/Ubuntu: apt-get install zookeeper; macOS: brew install zookeeper), or set "
            "ZOOKEEPER_HOME to an unpacked release, or MINIBROKER_ZOOKEEPER_JARS to its classpath") from None
    return os.pathsep.join(str(j) for j in fetched)


def find() -> ZooKeeperInstall:
    """Java and the ZooKeeper jars to run a server with (fetching them on first use if need be)."""
    java = _java()
    if os.environ.get("MINIBROKER_ZOOKEEPER", "").lower() == "maven":
        return ZooKeeperInstall(java, _maven_classpath(), "maven")
    given = os.environ.get("MINIBROKER_ZOOKEEPER_JARS")
    if given:
        return ZooKeeperInstall(java, given, "MINIBROKER_ZOOKEEPER_JARS")
    home = os.environ.get("ZOOKEEPER_HOME")
    if home:
        classpath = _home_classpath(Path(home))
        if classpath is None:
            raise ZooKeeperUnavailable(f"ZOOKEEPER_HOME={home} holds no zookeeper-*.jar (in lib/ or beside it)")
        return ZooKeeperInstall(java, classpath, "ZOOKEEPER_HOME")
    if DEBIAN_JAR.exists():
        return ZooKeeperInstall(java, os.pathsep.join([str(DEBIAN_CONF), str(DEBIAN_JAR)]), "debian")
    for brew_home in HOMEBREW_HOMES:
        classpath = _home_classpath(brew_home) if brew_home.is_dir() else None
        if classpath is not None:
            return ZooKeeperInstall(java, classpath, "homebrew")
    return ZooKeeperInstall(java, _maven_classpath(), "maven")


def available() -> bool:
    """Whether a ZooKeeper can be run here (see find(); this may fetch its jars once)."""
    try:
        find()
    except ZooKeeperUnavailable:
        return False
    return True


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent() -> None:
    """In the child before exec: Linux kills it when the thread that started it ends (PR_SET_PDEATHSIG), so a
    test run killed by a timeout, or a cluster stopped with a signal, leaves no JVM behind. Start such children
    from a thread that lives as long as they should (the main thread)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _ruok(port: int, host: str = "127.0.0.1") -> bool:
    """ZooKeeper answers 'srvr' (whitelisted by default) once it serves clients."""
    try:
        with socket.create_connection((host, port), timeout=1) as s:
            s.sendall(b"srvr")
            return b"Zookeeper version" in s.recv(4096)
    except OSError:
        return False


def expire_session(hosts: str, session_id: int, password: bytes, timeout: float = 30.0) -> None:
    """End another client's session, as ZooKeeper does when its timeout passes: take the session over with
    its id and password, then close it (the classic trick; ZooKeeper has no command for it). The client
    whose session it was learns on its next exchange with the server that the session expired.
    `hosts`: "HOST:PORT[,...]" (no chroot)."""
    from kazoo.client import KazooClient

    other = KazooClient(hosts=hosts, client_id=(session_id, password))
    other.start(timeout=timeout)
    try:
        other.stop()  # sends closeSession: the session and its ephemeral znodes end now
    finally:
        other.close()


class ZooKeeperServer:
    """Start/stop/restart one standalone server; `address` is "HOST:PORT" (127.0.0.1 unless told)."""

    def __init__(self, directory: Path | None = None, port: int = 0, *, host: str = "127.0.0.1",
                 command_prefix: tuple[str, ...] = ()) -> None:
        """`directory`: where it keeps its data (a temporary one, removed by cleanup(), when None); `port`: a
        free one when 0; `host`: the address it serves on; `command_prefix`: what runs the JVM (`nsenter
        --net=...` for a network namespace), a program that execs it. Raises ZooKeeperUnavailable when
        ZooKeeper cannot be run here (see find())."""
        self.install = find()
        self.host = host
        self.command_prefix = tuple(command_prefix)
        self._temporary = directory is None
        self.dir = Path(tempfile.mkdtemp(prefix="minibroker-zk-")) if directory is None else Path(directory)
        self.port = port or _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        (self.dir / "data").mkdir(parents=True, exist_ok=True)
        (self.dir / "zoo.cfg").write_text(
            f"tickTime=2000\ndataDir={self.dir / 'data'}\nclientPort={self.port}\n"
            f"clientPortAddress={host}\nadmin.enableServer=false\n4lw.commands.whitelist=srvr\n"
            "maxSessionTimeout=60000\n")
        # ZooKeeper 3.8 logs through logback; without a configuration of its own it would log at DEBUG.
        (self.dir / "logback.xml").write_text(_LOGBACK)

    @property
    def address(self) -> str:
        """"HOST:PORT", what clients and brokers take as zookeeper.connect (add a chroot)."""
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 60.0) -> ZooKeeperServer:
        """Start the server and return once it serves clients; its log is `zookeeper.log` in its directory."""
        log = open(self.dir / "zookeeper.log", "ab")  # noqa: SIM115 - owned by the child process
        self.proc = subprocess.Popen(
            [*self.command_prefix, self.install.java, "-Xmx256m", "-Dzookeeper.log.dir=" + str(self.dir),
             "-Dlogback.configurationFile=" + str(self.dir / "logback.xml"), "-cp", self.install.classpath,
             "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(self.dir / "zoo.cfg")],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=die_with_parent if threading.current_thread() is threading.main_thread() else None)
        log.close()
        deadline = time.monotonic() + timeout
        while not _ruok(self.port, self.host):
            if self.proc.poll() is not None:
                raise RuntimeError(f"ZooKeeper ({self.install.origin}: {self.install.classpath[:200]}) exited: "
                                   f"{(self.dir / 'zookeeper.log').read_text()[-2000:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("ZooKeeper did not start in time")
            time.sleep(0.1)
        return self

    def pause(self) -> None:
        """SIGSTOP: the server freezes with its connections open (its clients' sessions run out meanwhile)."""
        if self.proc is not None:
            os.killpg(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after pause()."""
        if self.proc is not None:
            os.killpg(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        """Stop it (SIGTERM, then SIGKILL after 20 s); its data stays for a start() again."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGCONT)  # a paused server could not act on SIGTERM
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None

    def cleanup(self) -> None:
        """Stop it, and remove its data when it was a temporary directory."""
        self.stop()
        if self._temporary:
            shutil.rmtree(self.dir, ignore_errors=True)


_LOGBACK = """<configuration>
  <appender name="CONSOLE" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{ISO8601} %-5level [%thread] %logger{36} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="CONSOLE"/></root>
</configuration>
"""
