"""A network of our own for the chaos test's nemeses: ZooKeeper and each broker in a network namespace of its
own, all on one bridge, the test process (the clients) on the host's side of it; partitions are packet
filters in the namespaces (iptables DROP: a peer cut off hears nothing, not even a refusal).

    with Network(["zookeeper", "broker-1", "broker-2", "broker-3"]) as net:
        cluster = MinibrokerCluster(tmp, 3, placement=net)   # each process started inside its namespace
        net.isolate("broker-1", from_=["broker-2", "broker-3", "zookeeper"])  # clients still reach it
        net.isolate("broker-2", from_=["zookeeper"], inbound_only=True)        # it talks, hears nothing back
        net.heal()

Linux only, as root (`ip`, `nsenter`, `iptables`). Nothing outlives the test run, even one killed with
SIGKILL: no namespace is named (each lives as long as a holder process, which dies with the thread that
started it, PR_SET_PDEATHSIG); the bridge sits in a namespace of its own, so the host's end of the link goes
with it. The addresses are 198.18.K.0/24 (RFC 2544's range for network tests), K the first free subnet: two
runs side by side take two.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterable

from broker.testkit.zookeeper import die_with_parent

SUBNETS = range(1, 255)
HOST_IP = 1  # the host's end: the clients


class NetworkUnavailable(RuntimeError):
    """Network namespaces cannot be made here (not Linux, not root, or a tool missing)."""


def available() -> str | None:
    """None when a Network can be made here; otherwise why not."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "network namespaces need root"
    missing = [tool for tool in ("ip", "nsenter", "iptables") if shutil.which(tool) is None]
    if missing:
        return f"missing {', '.join(missing)} (Debian: apt-get install iproute2 util-linux iptables)"
    return None


def _run(*cmd: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if done.returncode:
        raise NetworkUnavailable(f"{' '.join(cmd)}: {done.stderr.strip() or done.returncode}")


class Network:
    """Namespaces for `names`, each with an address on one bridge; see the module docstring."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = list(names)
        self.subnet = -1
        self._holders: dict[str, subprocess.Popen[bytes]] = {}
        self._cuts: set[tuple[str, str, str]] = set()  # (namespace, chain, peer address): rules in force

    # -- life ---------------------------------------------------------------------------------------------------
    def start(self) -> Network:
        reason = available()
        if reason is not None:
            raise NetworkUnavailable(reason)
        try:
            switch = self._holder("switch")
            _run(*self._in("switch"), "ip", "link", "add", "br0", "type", "bridge")
            _run(*self._in("switch"), "ip", "link", "set", "br0", "up")
            self._host_link(switch)
            for index, name in enumerate(self.names, start=10):
                self._holder(name)
                _run("ip", "link", "add", "veth0", "netns", str(self._holders[name].pid), "type", "veth",
                     "peer", "name", f"p{index}", "netns", str(switch.pid))
                _run(*self._in("switch"), "ip", "link", "set", f"p{index}", "master", "br0", "up")
                _run(*self._in(name), "ip", "addr", "add", f"{self._address(index)}/24", "dev", "veth0")
                _run(*self._in(name), "ip", "link", "set", "veth0", "up")
                _run(*self._in(name), "ip", "link", "set", "lo", "up")
            for name in self.names:
                self._wait_reachable(self.host(name))
        except BaseException:
            self.close()
            raise
        return self

    def _holder(self, name: str) -> subprocess.Popen[bytes]:
        """A process in a new network namespace, doing nothing: the namespace lives as long as it does."""
        holder = subprocess.Popen(["unshare", "--net", "--", "sleep", "infinity"], preexec_fn=die_with_parent)
        self._holders[name] = holder
        mine = os.readlink("/proc/self/ns/net")
        deadline = time.monotonic() + 10
        while True:  # unshare execs sleep once the namespace is made
            try:
                if os.readlink(f"/proc/{holder.pid}/ns/net") != mine:
                    return holder
            except FileNotFoundError:
                raise NetworkUnavailable(f"unshare --net exited with {holder.wait()}") from None
            if time.monotonic() > deadline:
                raise NetworkUnavailable("unshare --net made no namespace in 10 s")
            time.sleep(0.01)

    def _host_link(self, switch: subprocess.Popen[bytes]) -> None:
        """The host's end of the bridge, on the first free subnet (the interface's name claims it)."""
        for subnet in SUBNETS:
            name = f"mbchaos{subnet}"
            if os.path.exists(f"/sys/class/net/{name}"):
                continue
            try:
                _run("ip", "link", "add", name, "type", "veth", "peer", "name", "host", "netns", str(switch.pid))
            except NetworkUnavailable:
                continue  # taken meanwhile by a run beside this one
            self.subnet = subnet
            _run(*self._in("switch"), "ip", "link", "set", "host", "master", "br0", "up")
            _run("ip", "addr", "add", f"{self._address(HOST_IP)}/24", "dev", name)
            _run("ip", "link", "set", name, "up")
            return
        raise NetworkUnavailable("no free subnet in 198.18.1-254.0/24")

    def _wait_reachable(self, address: str) -> None:
        """Until the bridge forwards (its ports come up a moment after the links): ARP answers."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            probe = subprocess.run(["ip", "neigh", "get", address, "dev", f"mbchaos{self.subnet}"],
                                   capture_output=True, text=True)
            if probe.returncode == 0 and "lladdr" in probe.stdout:
                return
            # A UDP datagram to a closed port makes the kernel resolve the neighbour (and costs nothing).
            import socket

            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.sendto(b"", (address, 9))
            time.sleep(0.05)
        raise NetworkUnavailable(f"{address} not reachable over the bridge")

    def close(self) -> None:
        """End the holders: the namespaces, their links and rules go with them."""
        for holder in self._holders.values():
            if holder.poll() is None:
                holder.kill()
                holder.wait()
        self._holders.clear()
        self._cuts.clear()
        if self.subnet >= 0:
            # Normally gone with the switch's namespace; a process of ours still inside one keeps it alive.
            subprocess.run(["ip", "link", "del", f"mbchaos{self.subnet}"], capture_output=True)
            self.subnet = -1

    def __enter__(self) -> Network:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- placement (broker.testkit.cluster.Placement) --------------------------------------------------------------
    def _address(self, index: int) -> str:
        return f"198.18.{self.subnet}.{index}"

    def host(self, name: str) -> str:
        """The address of `name` on the bridge ("client": the host's end, where the test's clients are)."""
        return self._address(HOST_IP if name == "client" else self.names.index(name) + 10)

    def command_prefix(self, name: str) -> tuple[str, ...]:
        """Runs a command inside `name`'s namespace (nsenter execs it: the process started is the command's)."""
        return self._in(name)

    def _in(self, name: str) -> tuple[str, ...]:
        return ("nsenter", f"--net=/proc/{self._holders[name].pid}/ns/net", "--")

    # -- nemeses --------------------------------------------------------------------------------------------------
    def isolate(self, name: str, from_: Iterable[str], *, inbound_only: bool = False) -> None:
        """`name` and each of `from_` stop hearing each other (packets dropped both ways, in both namespaces);
        `inbound_only`: only what comes to `name` from them is dropped (they still hear it)."""
        for peer in from_:
            self._cut(name, "INPUT", peer)
            if not inbound_only:
                self._cut(name, "OUTPUT", peer)
                if peer != "client":
                    self._cut(peer, "INPUT", name)
                    self._cut(peer, "OUTPUT", name)

    def _cut(self, name: str, chain: str, peer: str) -> None:
        address = self.host(peer)
        if (name, chain, address) in self._cuts:
            return
        flag = "-s" if chain == "INPUT" else "-d"
        _run(*self._in(name), "iptables", "-w", "-A", chain, flag, address, "-j", "DROP")
        self._cuts.add((name, chain, address))

    def heal(self) -> None:
        """Every cut undone: packets flow again (connections that gave up meanwhile are made anew)."""
        for name in {name for name, _, _ in self._cuts}:
            _run(*self._in(name), "iptables", "-w", "-F")
        self._cuts.clear()

    def cuts(self) -> list[tuple[str, str, str]]:
        """The rules in force: (namespace, INPUT or OUTPUT, peer address)."""
        return sorted(self._cuts)
