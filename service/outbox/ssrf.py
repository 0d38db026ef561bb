"""Where deliveries may go. In prod mode an endpoint on a loopback, private, link-local or otherwise
non-public address is refused unless allow-listed (TITANGRADE_WEBHOOK_ALLOWED_HOSTS), both when it is
registered and at every connection: the transport resolves the name itself, checks every address and
connects to a checked one, so a DNS answer that changes after registration (rebinding) is caught too.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpcore
import httpx
from httpcore._backends.sync import SyncBackend


class EndpointRefused(ValueError):
    """The URL is not a place titangrade will send events to; the message names why and the fix."""


@dataclass(frozen=True, slots=True)
class AddressPolicy:
    """`enforce` is True in prod mode; `allowed` holds host names and networks exempt from the check."""

    enforce: bool
    hosts: frozenset[str] = field(default_factory=frozenset)
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()

    @classmethod
    def from_settings(cls, settings) -> AddressPolicy:
        hosts, networks = set(), []
        for item in filter(None, (p.strip() for p in settings.webhook_allowed_hosts.split(","))):
            try:
                networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                hosts.add(item.lower().rstrip("."))
        return cls(enforce=settings.mode == "prod", hosts=frozenset(hosts), networks=tuple(networks))

    def check_address(self, host: str, address: str) -> None:
        if not self.enforce or host.lower().rstrip(".") in self.hosts:
            return
        ip = ipaddress.ip_address(address.split("%")[0])
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
            ip = ip.ipv4_mapped
        if any(ip in net for net in self.networks):
            return
        if not ip.is_global or ip.is_multicast:
            raise EndpointRefused(
                f"{host} resolves to {ip}, a loopback, private, link-local or reserved address; webhooks only go "
                "to public addresses in prod mode (an administrator can allow it with "
                "TITANGRADE_WEBHOOK_ALLOWED_HOSTS)"
            )

    def resolve(self, host: str, port: int) -> list[str]:
        """Every address `host` resolves to, each checked; raises EndpointRefused or OSError."""
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        for address in addresses:
            self.check_address(host, address)
        return addresses


def check_url(url: str, policy: AddressPolicy, *, resolve: bool = True) -> str:
    """Validate an endpoint URL at registration: http(s), a host, no credentials, allowed addresses."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointRefused("the endpoint URL must be an absolute http:// or https:// URL with a host")
    if parts.username or parts.password:
        raise EndpointRefused("the endpoint URL must not carry credentials; authenticate by the signature")
    if resolve and policy.enforce:
        try:
            policy.resolve(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
        except OSError as exc:
            raise EndpointRefused(
                f"the endpoint host {parts.hostname} does not resolve ({exc.strerror or exc})"
            ) from None
    return url


class _CheckedBackend(httpcore.NetworkBackend):
    """Connects only to addresses the policy allows, after resolving the name itself."""

    def __init__(self, policy: AddressPolicy) -> None:
        self.policy = policy
        self.inner = SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable | None = None,
    ) -> httpcore.NetworkStream:
        try:
            addresses = self.policy.resolve(host, port)
        except EndpointRefused as exc:
            raise httpcore.ConnectError(f"refused: {exc}") from None
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from None
        last: Exception | None = None
        for address in addresses:
            try:
                return self.inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        raise last or httpcore.ConnectError(f"no address for {host}")

    def connect_unix_socket(self, *args, **kwargs):  # never used for webhooks
        raise httpcore.ConnectError("unix sockets are not webhook endpoints")

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


def make_client(policy: AddressPolicy, *, timeout_s: float, max_connections: int) -> httpx.Client:
    """An HTTP client for deliveries: checked addresses, no redirects, no proxies from the environment."""
    transport = httpx.HTTPTransport(trust_env=False)
    # httpx has no public hook for the network backend, so the pool is rebuilt with one (httpx 0.28).
    transport._pool = httpcore.ConnectionPool(
        ssl_context=httpx.create_ssl_context(),
        max_connections=max_connections,
        max_keepalive_connections=max_connections,
        keepalive_expiry=5.0,
        network_backend=_CheckedBackend(policy),
    )
    return httpx.Client(
        transport=transport,
        follow_redirects=False,
        trust_env=False,
        timeout=httpx.Timeout(timeout_s),
        headers={"user-agent": "titangrade-webhooks/1"},
    )
