"""The web console in a real browser (headless Chromium through selenium) against a real broker and real clients:
every page loads without a browser console error at a desktop and a phone size; a message produced through the
form is read by a consumer; a group's lag drops on the page once its consumer commits; the live tail shows a record
a client produced; an open transaction appears and leaves once committed; topics created, grown and deleted, an
empty group's offsets reset, fault rules and the virtual clock set through the forms; the password's login."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from broker.testkit import BrokerThread
from tests.console.browser import PHONE, errors

WAIT_S = 30

PAGES = ["/", "/topics", "/topics?internal=1", "/topics/{topic}", "/topics/{topic}/messages",
         "/topics/{topic}/messages?from=offset&offset=0&format=hex", "/topics/{topic}/messages?tail=1",
         "/topics/{topic}/produce", "/groups", "/groups/{group}", "/transactions", "/transactions?all=1",
         "/security", "/trace", "/trace?api=PRODUCE", "/testkit", "/login"]


def wait(driver: Any, condition: Any, message: str) -> Any:
    return WebDriverWait(driver, WAIT_S, poll_frequency=0.1).until(condition, message)


def text(driver: Any, css: str) -> str:
    """The element's visible text, read in one step (htmx may replace it between two)."""
    return driver.execute_script("const e = document.querySelector(arguments[0]); return e ? e.innerText.trim() : ''",
                                 css)


def fill(driver: Any, form: str, **values: str) -> None:
    for name, value in values.items():
        field = driver.find_element(By.CSS_SELECTOR, f"#{form} [name={name}]")
        if field.tag_name == "select":
            Select(field).select_by_value(value)
        else:
            field.clear()
            field.send_keys(value)


def submit(driver: Any, form: str) -> None:
    driver.find_element(By.CSS_SELECTOR, f"#{form} button[type=submit]").click()


def produce(bootstrap: str, topic: str, values: list[bytes], **config: Any) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, **config)
    for value in values:
        producer.send(topic, value, partition=0)
    producer.flush(30)
    producer.close()


@pytest.mark.minibroker(console=True)
def test_every_page_loads_without_a_console_error_at_desktop_and_phone_size(page: Any,
                                                                             minibroker_server: BrokerThread) -> None:
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    produce(minibroker_server.bootstrap, topic, [b'{"n": %d}' % i for i in range(5)])
    consumer = KafkaConsumer(bootstrap_servers=minibroker_server.bootstrap, group_id=group, enable_auto_commit=False)
    consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(2, "", -1)})
    consumer.close()
    url = minibroker_server.console_url
    for width, height in ((1280, 800), PHONE):
        page.set_window_size(width, height)
        for path in PAGES:
            page.get(url + path.format(topic=topic, group=group))
            wait(page, lambda d: d.execute_script("return document.readyState") == "complete", f"{path} loaded")
            assert page.find_element(By.TAG_NAME, "h1").text, path
            assert errors(page) == [], (path, width)
            # The page fits the window's width (wide tables scroll inside their own box).
            assert page.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1"), \
                (path, width)
    page.get(url + f"/groups/{group}")
    assert text(page, f"#lag tr[data-tp='{topic}-0'] .lag") == "3"


@pytest.mark.minibroker(console=True)
def test_a_message_produced_through_the_form_is_read_by_a_consumer(page: Any, minibroker_server: BrokerThread) -> None:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    url = minibroker_server.console_url
    page.get(url + "/topics")
    fill(page, "create-topic", name=topic, partitions="2")
    submit(page, "create-topic")
    wait(page, lambda d: f"/topics/{topic}?done=" in d.current_url, "the new topic's page")
    assert len(page.find_elements(By.CSS_SELECTOR, "#partitions tbody tr")) == 2

    page.get(url + f"/topics/{topic}/produce")
    fill(page, "produce", partition="1", key="order-7", value='{"item": "console", "qty": 2}',
         headers="trace-id: 42\nsource: browser")
    submit(page, "produce")
    wait(page, lambda d: "/messages" in d.current_url, "the messages page")
    assert f"Produced to {topic}-1 at offset 0." in text(page, ".notice")
    row = page.find_element(By.CSS_SELECTOR, "#records tr.record[data-partition='1'][data-offset='0']")
    assert '"qty": 2' in row.find_element(By.CSS_SELECTOR, ".value").text

    consumer = KafkaConsumer(bootstrap_servers=minibroker_server.bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=10_000)
    consumer.assign([TopicPartition(topic, 1)])
    record = next(iter(consumer))
    consumer.close()
    assert (record.key, record.value) == (b"order-7", b'{"item": "console", "qty": 2}')
    assert record.headers == [("trace-id", b"42"), ("source", b"browser")]


@pytest.mark.minibroker(console=True)
def test_a_groups_lag_drops_on_the_page_once_its_consumer_commits(page: Any, minibroker_server: BrokerThread) -> None:
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    produce(minibroker_server.bootstrap, topic, [b"m%d" % i for i in range(10)])
    consumer = KafkaConsumer(topic, bootstrap_servers=minibroker_server.bootstrap, group_id=group,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        polled: list[Any] = []
        while len(polled) < 10:
            for records in consumer.poll(timeout_ms=1000).values():
                polled += records
        consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(3, "", -1)})
        page.get(minibroker_server.console_url + f"/groups/{group}")
        assert text(page, f"#lag tr[data-tp='{topic}-0'] .lag") == "7"
        assert text(page, "#group-state") == "Stable"
        assert topic + "-0" in text(page, "#members")
        consumer.commit()  # every record polled: offset 10
        # The page refreshes itself (htmx, every 2 s): no reload.
        wait(page, lambda d: text(d, f"#lag tr[data-tp='{topic}-0'] .lag") == "0", "the lag to drop to 0")
        assert text(page, "#total-lag") == "0"
        assert text(page, f"#lag tr[data-tp='{topic}-0'] .committed") == "10"
    finally:
        consumer.close()


@pytest.mark.minibroker(console=True)
def test_the_live_tail_shows_a_record_a_client_produced(page: Any, minibroker_server: BrokerThread) -> None:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    produce(minibroker_server.bootstrap, topic, [b"before the tail"])
    page.get(minibroker_server.console_url + f"/topics/{topic}/messages?tail=1")
    wait(page, lambda d: text(d, "#tail-status") == "live", "the tail to go live")
    marker = f"tail-{uuid.uuid4().hex}"
    produce(minibroker_server.bootstrap, topic, [marker.encode()])
    wait(page, lambda d: marker in text(d, "#tail tbody"), "the record in the tail")
    assert "before the tail" not in text(page, "#tail tbody")  # the tail starts at the end
    page.get("about:blank")  # closes the stream before the broker stops


@pytest.mark.minibroker(console=True)
def test_the_live_trace_shows_a_clients_requests(page: Any, minibroker_server: BrokerThread) -> None:
    client_id = f"app-{uuid.uuid4().hex[:6]}"
    page.get(minibroker_server.console_url + f"/trace?client_id={client_id}")
    wait(page, lambda d: text(d, "#trace-status") == "live", "the trace to go live")
    produce(minibroker_server.bootstrap, "traced", [b"x"], client_id=client_id)
    wait(page, lambda d: "PRODUCE v" in text(d, "#trace tbody"), "the client's Produce in the trace")
    assert client_id in text(page, "#trace tbody")
    assert "minibroker-console" not in text(page, "#trace tbody")  # the console's own requests are left out
    page.get("about:blank")


@pytest.mark.minibroker(console=True)
def test_an_open_transaction_appears_and_leaves_once_committed(page: Any, minibroker_server: BrokerThread) -> None:
    topic, txn_id = f"t-{uuid.uuid4().hex[:8]}", f"txn-{uuid.uuid4().hex[:8]}"
    produce(minibroker_server.bootstrap, topic, [b"plain"])
    producer = KafkaProducer(bootstrap_servers=minibroker_server.bootstrap, transactional_id=txn_id)
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"in a transaction", partition=0).get(30)
        page.get(minibroker_server.console_url + "/transactions")
        row = f"#transactions tr[data-transactional-id='{txn_id}']"
        wait(page, lambda d: "Ongoing" in text(d, row), "the open transaction")
        assert f"{topic}-0" in text(page, row)
        assert page.find_elements(By.CSS_SELECTOR, "#producers tbody tr:not(.empty)")  # its producer, per partition
        producer.commit_transaction()
        wait(page, lambda d: not d.find_elements(By.CSS_SELECTOR, row), "the committed transaction to leave")
    finally:
        producer.close()
    page.get(minibroker_server.console_url + f"/topics/{topic}/messages?from=offset&offset=0")
    assert "COMMIT marker" in text(page, "#records")


@pytest.mark.minibroker(console=True)
def test_topics_groups_faults_and_the_clock_change_through_the_forms(page: Any, tmp_path: Path) -> None:
    with BrokerThread(tmp_path / "b", console=True, virtual_time=True) as broker:
        url, topic, group = broker.console_url, f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
        produce(broker.bootstrap, topic, [b"x%d" % i for i in range(6)])
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False)
        consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(6, "", -1)})
        consumer.close()

        page.get(url + f"/groups/{group}")  # an empty group: its offsets reset to the earliest
        fill(page, "reset-offsets", topic=topic, to="earliest")
        submit(page, "reset-offsets")
        wait(page, lambda d: text(d, f"#lag tr[data-tp='{topic}-0'] .lag") == "6", "the reset offsets")
        fill(page, "delete-offsets", topic=topic)
        submit(page, "delete-offsets")
        page.switch_to.alert.accept()
        wait(page, lambda d: "the group is gone" in text(d, ".notice"), "the deleted offsets")
        assert group not in text(page, "#groups")  # empty and without offsets: gone, as in Kafka

        page.get(url + f"/topics/{topic}")
        fill(page, "add-partitions", count="3")
        submit(page, "add-partitions")
        wait(page, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#partitions tbody tr")) == 3, "3 partitions")
        fill(page, "add-partitions", count="2")  # fewer: Kafka's INVALID_PARTITIONS, on the page
        page.execute_script("document.querySelector('#add-partitions [name=count]').removeAttribute('min')")
        submit(page, "add-partitions")
        wait(page, lambda d: "INVALID_PARTITIONS" in text(d, "#error-message"), "Kafka's refusal on the page")
        errors(page)  # the 400 answer's own log line
        submit(page, "delete-topic")
        page.switch_to.alert.accept()
        wait(page, lambda d: "/topics?done=Deleted+topic+" + topic in d.current_url, "the topics page")
        assert topic not in text(page, "#topics")

        page.get(url + "/testkit")
        fill(page, "add-fault", action="error", api="PRODUCE", error="NOT_LEADER_OR_FOLLOWER", count="2")
        submit(page, "add-fault")
        wait(page, lambda d: "NOT_LEADER_OR_FOLLOWER" in text(d, "#faults"), "the fault rule")
        assert [r["error"] for r in broker.faults()] == ["NOT_LEADER_OR_FOLLOWER"]
        submit(page, "clear-faults")
        wait(page, lambda d: "No fault rules" in text(d, "#faults"), "no rules")
        before = broker.call(lambda b: b.now_ms())
        fill(page, "advance-clock", seconds="3600")
        submit(page, "advance-clock")
        wait(page, lambda d: "Advanced" in text(d, ".notice"), "the clock advanced")
        assert broker.call(lambda b: b.now_ms()) == before + 3_600_000


def test_a_password_is_asked_at_the_login_form(page: Any, tmp_path: Path) -> None:
    secret = tmp_path / "console-password"
    secret.write_text("s3cret-console\n")
    with BrokerThread(tmp_path / "b", console=True, console_password_file=str(secret)) as broker:
        page.get(broker.console_url + "/topics")
        wait(page, lambda d: "/login" in d.current_url, "the login form")
        fill(page, "login", password="wrong")
        submit(page, "login")
        wait(page, lambda d: text(d, "#error-message") == "Wrong password.", "the refusal")
        errors(page)  # the 401 answer's own log line
        fill(page, "login", password="s3cret-console")
        submit(page, "login")
        wait(page, lambda d: d.current_url.endswith("/topics"), "the page asked for")
        page.find_element(By.CSS_SELECTOR, ".logout button").click()
        wait(page, lambda d: "/login" in d.current_url, "logged out")
        page.get(broker.console_url + "/")
        assert "/login" in page.current_url
