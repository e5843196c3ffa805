"""Webhooks cannot reach inside: the destination rule over generated addresses and their
spellings, checked when a subscription is made or changed and again before every POST, the
headers a subscription may set, and failures recorded by class, never by the remote's text."""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable, Iterator, Sequence

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deadletter.adapters.webhooks import HttpxSender
from deadletter.domain import errors
from deadletter.domain.subscriptions import Delivery
from deadletter.engine import notifier
from deadletter.engine.deliveries import Deliveries, DeliverySettings
from deadletter.engine.destinations import (
    DestinationRefused,
    Destinations,
    DestinationUnresolved,
    IPAddress,
    address_kind,
)
from deadletter.engine.engine import Engine
from deadletter.engine.subscriptions import RetryPolicy
from tests.engine.helpers import P, send, with_dlq
from tests.support.receivers import WAIT, allow_local, receiving

# No deadline: an example is judged by what it finds, never by how long it took.
UNTIMED = settings(deadline=None)
# Examples that share one engine (a fixture), each leaving it as it found it.
FIXTURED = settings(UNTIMED, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Every kind of address a webhook may not reach, by network.
REFUSED = {
    "loopback": ["127.0.0.0/8", "::1/128"],
    "private": ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"],
    "link-local": ["169.254.0.0/16", "fe80::/10"],
    "unique-local": ["fc00::/7"],
    "shared": ["100.64.0.0/10"],
    "multicast": ["224.0.0.0/4", "ff00::/8"],
    "reserved": ["240.0.0.0/4", "198.18.0.0/15", "192.0.2.0/24", "2001:db8::/32", "fec0::/10"],
    "unspecified": ["0.0.0.0/8", "::/128"],
}
PUBLIC = ["8.8.8.0/24", "1.1.1.0/24", "93.184.216.0/24", "151.101.0.0/16", "2606:4700::/32",
          "2a00:1450::/32"]  # fmt: skip


def in_network(cidr: str) -> st.SearchStrategy[IPAddress]:
    net = ipaddress.ip_network(cidr)
    return st.integers(0, net.num_addresses - 1).map(lambda i: net[i])


refused_v4 = st.sampled_from(
    [c for nets in REFUSED.values() for c in nets if ":" not in c]
).flatmap(in_network)
refused_plain = st.sampled_from([c for nets in REFUSED.values() for c in nets]).flatmap(in_network)
# IPv6 addresses that carry a refused IPv4 one: IPv4-mapped, 6to4, NAT64.
refused_carried = st.one_of(
    refused_v4.map(lambda a: ipaddress.IPv6Address(f"::ffff:{a}")),
    refused_v4.map(lambda a: ipaddress.IPv6Address((0x2002 << 112) | (int(a) << 80))),
    refused_v4.map(lambda a: ipaddress.IPv6Address(f"64:ff9b::{a}")),
)
refused = st.one_of(refused_plain, refused_carried)
public_plain = st.sampled_from(PUBLIC).flatmap(in_network)
# A public IPv4 address reached through its IPv4-mapped IPv6 spelling is as public.
public = st.one_of(
    public_plain,
    public_plain.filter(lambda a: a.version == 4).map(
        lambda a: ipaddress.IPv6Address(f"::ffff:{a}")
    ),
)


def spellings(ip: ipaddress.IPv4Address) -> list[str]:
    """The ways the system resolver reads an IPv4 address (inet_aton's forms)."""
    n, parts = int(ip), [int(p) for p in str(ip).split(".")]
    return [
        str(ip),
        str(n),  # 2130706433
        hex(n),  # 0x7f000001
        ".".join(oct(p).replace("0o", "0") for p in parts),  # 0177.00.00.01
        ".".join(hex(p) for p in parts),  # 0x7f.0x0.0x0.0x1
        f"{parts[0]}.{parts[1]}.{parts[2] * 256 + parts[3]}",  # 127.0.1
        f"{parts[0]}.{n & 0xFFFFFF}",  # 127.1
    ]


def queue(engine: Engine) -> None:
    """Queue "q", once for the examples that share an engine."""
    if engine.find_queue(P, "q") is None:
        engine.create_queue(P, "q")


def host_of(ip: IPAddress) -> str:
    return f"[{ip}]" if ip.version == 6 else str(ip)


class Resolver:
    """A resolver whose answers the test sets, counting the questions."""

    def __init__(self, *answers: str) -> None:
        self.answers: Sequence[str] = answers
        self.asked = 0

    def __call__(self, host: str, port: int) -> Sequence[str]:
        self.asked += 1
        if not self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.answers


# The rule


@settings(UNTIMED)
@given(refused)
def test_no_address_of_a_refused_kind_is_allowed(ip: IPAddress) -> None:
    assert address_kind(ip) is not None
    assert not Destinations().allowed(ip)


@settings(UNTIMED)
@given(public)
def test_public_addresses_are_allowed(ip: IPAddress) -> None:
    assert address_kind(ip) is None and Destinations().allowed(ip)


@settings(UNTIMED)
@given(refused_v4, st.data())
def test_every_spelling_of_a_refused_address_is_refused(
    ip: ipaddress.IPv4Address, data: st.DataObject
) -> None:
    # The real resolver: it reads every numeric spelling without asking DNS.
    spelling = data.draw(st.sampled_from(spellings(ip)))
    with pytest.raises(DestinationRefused):
        Destinations().check(f"http://{spelling}:8080/hook")
    mapped = ipaddress.IPv6Address(f"::ffff:{ip}")
    with pytest.raises(DestinationRefused):
        Destinations().check(f"http://[{mapped}]/hook")


@settings(UNTIMED)
@given(refused, public)
def test_a_name_with_one_refused_address_among_public_ones_is_refused(
    bad: IPAddress, good: IPAddress
) -> None:
    with pytest.raises(DestinationRefused):
        Destinations(resolve=Resolver(str(good), str(bad))).check("https://hook.test/")


@settings(UNTIMED)
@given(refused_plain)
def test_the_operator_allows_a_network_and_only_it(ip: IPAddress) -> None:
    net = ipaddress.ip_network(f"{ip}/{ip.max_prefixlen}")
    allowing = Destinations([str(net)], resolve=Resolver(str(ip)))
    assert allowing.check("http://hook.test/") == (ip,)
    if ip.version == 4:  # the IPv4-mapped spelling of an allowed address is allowed too
        assert allowing.allowed(ipaddress.IPv6Address(f"::ffff:{ip}"))
    other = Destinations(["203.0.113.7/32"], resolve=Resolver(str(ip)))
    with pytest.raises(DestinationRefused):
        other.check("http://hook.test/")


def test_a_name_that_does_not_resolve_is_unresolved() -> None:
    with pytest.raises(DestinationUnresolved):
        Destinations(resolve=Resolver()).check("http://hook.test/")


# At creation and change


@settings(FIXTURED, max_examples=40)
@given(ip=st.one_of(refused, refused_v4.map(lambda a: spellings(a)[1])))
def test_a_subscription_to_a_refused_destination_is_not_made(
    engine: Engine, ip: IPAddress | str
) -> None:
    queue(engine)
    host = ip if isinstance(ip, str) else host_of(ip)
    with pytest.raises(errors.InvalidInput, match="webhooks may not reach"):
        engine.subscriptions.create(P, "q", subscriber=f"http://{host}/hook", ttl=600, options={})
    assert engine.subscriptions.list_page(P, "q") == []


def test_a_name_resolving_inside_is_refused_and_the_address_not_told(engine: Engine) -> None:
    engine.create_queue(P, "q")
    engine.subscriptions.destinations = Destinations(resolve=Resolver("10.20.30.40"))
    with pytest.raises(errors.InvalidInput) as refused_:
        engine.subscriptions.create(
            P, "q", subscriber="http://db.internal.test/", ttl=600, options={}
        )
    assert "private" in str(refused_.value) and "10.20.30.40" not in str(refused_.value)


def test_a_subscription_cannot_be_changed_to_a_refused_destination(engine: Engine) -> None:
    engine.create_queue(P, "q")
    resolver = Resolver("93.184.216.34")
    engine.subscriptions.destinations = Destinations(resolve=resolver)
    sub, _ = engine.subscriptions.create(
        P, "q", subscriber="http://hook.test/", ttl=600, options={}
    )
    resolver.answers = ["169.254.169.254"]
    with pytest.raises(errors.InvalidInput, match="link-local"):
        engine.subscriptions.update(
            P, "q", subscription_id=sub.id, subscriber="http://metadata.test/"
        )
    assert (
        engine.subscriptions.get(P, "q", subscription_id=sub.id).subscriber == "http://hook.test/"
    )


# Headers

FORBIDDEN_HEADERS = ["Host", "Connection", "Keep-Alive", "TE", "Trailer", "Transfer-Encoding",
                     "Upgrade", "Content-Length", "Proxy-Authorization", "Proxy-Connection",
                     "Proxy-X"]  # fmt: skip


@st.composite
def any_case(draw: st.DrawFn, name: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(name), max_size=len(name)))
    return "".join(c.swapcase() if f else c for c, f in zip(name, flips, strict=True))


forbidden_header = st.sampled_from(FORBIDDEN_HEADERS).flatmap(any_case)
token = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.", min_size=1)
allowed_header = token.filter(
    lambda n: (
        n.lower() not in {h.lower() for h in FORBIDDEN_HEADERS}
        and not n.lower().startswith("proxy-")
    )
)


@settings(FIXTURED, max_examples=30)
@given(name=forbidden_header)
def test_a_subscription_may_not_set_host_or_hop_by_hop_headers(engine: Engine, name: str) -> None:
    queue(engine)
    options = {"post_headers": {"X-Token": "t", name: "evil"}}
    with pytest.raises(errors.InvalidInput, match=name):
        engine.subscriptions.create(
            P, "q", subscriber="http://hooks.example/a", ttl=600, options=options
        )
    sub, _ = engine.subscriptions.create(
        P, "q", subscriber="http://hooks.example/a", ttl=600, options={}
    )
    with pytest.raises(errors.InvalidInput, match=name):
        engine.subscriptions.update(P, "q", subscription_id=sub.id, options=options)
    assert engine.subscriptions.get(P, "q", subscription_id=sub.id).options == {}
    engine.subscriptions.delete(P, "q", subscription_id=sub.id)


@settings(UNTIMED)
@given(name=allowed_header, value=st.text(st.characters(min_codepoint=32, max_codepoint=126)))
def test_other_headers_are_sent_as_given(name: str, value: str) -> None:
    options = {"post_headers": {name: value}}
    assert notifier.check_options(options) == options
    _, headers = notifier.request_of(delivery("http://hook.test/", options))
    assert headers[name] == value


@pytest.mark.parametrize(
    "headers",
    [{"X-A": "line\r\nInjected: 1"}, {"X-A": 7}, {"X A": "v"}, {"X-A": "caf\u00e9"}, ["X-A"]],
)
def test_header_values_must_be_one_printable_line(headers: object) -> None:
    with pytest.raises(errors.InvalidInput, match="post_headers"):
        notifier.check_options({"post_headers": headers})


def test_a_stored_forbidden_header_is_not_sent() -> None:
    # A subscription stored before the rule keeps its options; the POST leaves them out.
    stored = {"post_headers": {"Host": "metadata.internal", "Metadata-Flavor": "Google"}}
    _, headers = notifier.request_of(delivery("http://hook.test/", stored))
    assert "Host" not in headers and headers["Metadata-Flavor"] == "Google"


# At delivery

FAST = DeliverySettings(retry=RetryPolicy(retries=2, backoff=1.0), timeout=WAIT, tick=0.01)


def delivery(subscriber: str, options: dict[str, object] | None = None) -> Delivery:
    return Delivery(
        id="d1", project=P, queue="q", subscription_id="s1", subscriber=subscriber,
        options=options or {}, message_id="m1", body=b'"x"', ttl=60, enqueued_at=0.0,
        due_at=0.0,
    )  # fmt: skip


@pytest.fixture
def runner_with(engine: Engine) -> Iterator[Callable[[Destinations], Deliveries]]:
    made: list[Deliveries] = []

    def make(destinations: Destinations) -> Deliveries:
        engine.subscriptions.destinations = destinations
        made.append(Deliveries(engine, HttpxSender(destinations), FAST))
        return made[-1]

    yield make
    for runner in made:
        runner.stop()


def round_(runner: Deliveries) -> None:
    runner.run_once()
    assert runner.drain(WAIT)


class Recording:
    """A transport that answers 204 to every request and keeps them."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self.answer))

    def answer(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(204)


@settings(UNTIMED)
@given(refused, st.sampled_from(["http", "https"]))
def test_at_delivery_no_refused_address_is_contacted(ip: IPAddress, scheme: str) -> None:
    # A name that passed at subscription and resolves, at delivery, to an inside address
    wire = Recording()
    sender = HttpxSender(Destinations(resolve=Resolver(str(ip))), wire.client())
    outcome = sender.send(delivery(f"{scheme}://hook.test/n"), WAIT)
    assert outcome == notifier.Outcome(False, notifier.FORBIDDEN, final=True)
    assert wire.requests == []


@settings(UNTIMED)
@given(public, st.sampled_from(["http", "https"]), st.sampled_from(["", ":8443"]))
def test_at_delivery_the_request_goes_to_the_address_checked(
    ip: IPAddress, scheme: str, port: str
) -> None:
    wire = Recording()
    sender = HttpxSender(Destinations(resolve=Resolver(str(ip))), wire.client())
    assert sender.send(delivery(f"{scheme}://hook.test{port}/n?a=1"), WAIT).ok
    (sent,) = wire.requests
    assert ipaddress.ip_address(sent.url.host) == ip
    assert (sent.url.scheme, sent.url.raw_path, sent.headers["host"]) == (
        scheme, b"/n?a=1", f"hook.test{port}"
    )  # fmt: skip
    if scheme == "https":  # the certificate is checked against the name, not the address
        assert sent.extensions["sni_hostname"] == "hook.test"


def test_a_name_that_turns_private_after_creation_is_not_contacted(
    engine: Engine, runner_with: Callable[[Destinations], Deliveries]
) -> None:
    # Given a receiver on loopback and a name that resolves to a public address,
    with_dlq(engine, "q", "q-dlq")
    resolver = Resolver("93.184.216.34")
    runner = runner_with(Destinations(resolve=resolver))
    with receiving() as hook:
        port = hook.url.split(":")[2].split("/")[0]
        engine.subscriptions.create(
            P, "q", subscriber=f"http://rebind.test:{port}/hook", ttl=600, options={}
        )
        # when the name resolves to the receiver's loopback address by the time of delivery,
        resolver.answers = ["127.0.0.1"]
        send(engine, "q", "x")
        round_(runner)
        # the receiver is never contacted, and the notification is dead-lettered at once
        assert hook.posts == []
    assert engine.subscriptions.pending(P, "q") == []
    (dead,) = engine.list_dead_letters(P, "q-dlq")
    assert dead.provenance is not None and dead.provenance.error == notifier.FORBIDDEN


def test_the_post_goes_to_the_address_checked_without_resolving_again(
    engine: Engine, runner_with: Callable[[Destinations], Deliveries]
) -> None:
    # A name the system cannot resolve, which the rule's resolver maps to the receiver:
    # the POST can only arrive if it goes to the checked address, with the name as Host.
    resolver = Resolver("127.0.0.1")
    runner = runner_with(Destinations(["127.0.0.0/8"], resolve=resolver))
    engine.create_queue(P, "q")
    with receiving() as hook:
        port = hook.url.split(":")[2].split("/")[0]
        engine.subscriptions.create(
            P, "q", subscriber=f"http://rebind.test:{port}/hook", ttl=600, options={}
        )
        asked = resolver.asked
        send(engine, "q", '"x"')
        round_(runner)
        ((headers, body),) = hook.posts
    assert headers["host"] == f"rebind.test:{port}" and body["body"] == "x"
    assert resolver.asked == asked + 1  # one check for this delivery, no second look-up


def sent_to(engine: Engine, runner: Deliveries, url: str) -> str | None:
    """The error the first attempt at `url` recorded."""
    queue(engine)
    sub, _ = engine.subscriptions.create(P, "q", subscriber=url, ttl=600, options={})
    send(engine, "q", "x")
    round_(runner)
    owed = engine.subscriptions.pending(P, "q")
    engine.subscriptions.delete(P, "q", subscription_id=sub.id)
    return owed[0].last_error if owed else "delivered"


def test_failures_are_recorded_by_class_never_by_the_remote_text(
    engine: Engine, runner_with: Callable[[Destinations], Deliveries]
) -> None:
    runner = runner_with(Destinations(["127.0.0.0/8"]))
    secret = b"internal admin console v1.2 at db-7.corp"
    with receiving(status=500, reply=secret) as failing:
        assert sent_to(engine, runner, failing.url) == "HTTP 500"
    with receiving(status=503, reply=secret) as busy:
        assert sent_to(engine, runner, busy.url) == "HTTP 503"
    assert sent_to(engine, runner, "http://127.0.0.1:9/closed") == notifier.REFUSED
    with receiving(reply=secret) as plain:  # TLS spoken to a plain HTTP port
        assert sent_to(engine, runner, plain.url.replace("http:", "https:")) == notifier.TLS
    runner_with(Destinations(resolve=Resolver()))
    assert sent_to(engine, runner, "http://hook.test/") == notifier.DNS


def test_a_subscriber_that_never_answers_is_a_timeout(engine: Engine) -> None:
    gate = threading.Event()
    with receiving(gate=gate) as silent:
        # a short timeout makes it happen; nothing here is judged by the clock
        runner = Deliveries(engine, allow_local(engine), DeliverySettings(timeout=0.2))
        try:
            assert sent_to(engine, runner, silent.url) == notifier.TIMEOUT
        finally:
            gate.set()
            runner.stop()


def test_a_redirect_is_not_followed(
    engine: Engine, runner_with: Callable[[Destinations], Deliveries]
) -> None:
    runner = runner_with(Destinations(["127.0.0.0/8"]))
    with receiving() as target, receiving(302, headers={"Location": "x"}) as redirecting:
        redirecting.headers["Location"] = target.url
        assert sent_to(engine, runner, redirecting.url) == "HTTP 302"
        assert len(redirecting.posts) == 1 and target.posts == []
