"""Peer for the lag benchmark, on confluent-kafka (librdkafka's Python client).

    kafka_groups.py commit BROKER TOPIC N   commit offsets for N groups TOPIC-0..N-1
    kafka_groups.py lag BROKER TOPIC N      print each group's lag per partition (messages)
"""
import sys

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient


def partitions(consumer, topic):
    meta = consumer.list_topics(topic, timeout=10)
    return sorted(meta.topics[topic].partitions)


def commit(broker, topic, n):
    for g in range(n):
        c = Consumer({"bootstrap.servers": broker, "group.id": f"{topic}-{g}", "enable.auto.commit": False})
        parts = partitions(c, topic)
        offsets = []
        for p in parts:
            low, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            offsets.append(TopicPartition(topic, p, low + (high - low) * g // n))
        c.commit(offsets=offsets, asynchronous=False)
        c.close()


def lag(broker, topic, n):
    admin = AdminClient({"bootstrap.servers": broker})
    probe = Consumer({"bootstrap.servers": broker, "group.id": "peer-probe"})
    parts = partitions(probe, topic)
    ends = {p: probe.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts}
    requests = [ConsumerGroupTopicPartitions(f"{topic}-{g}", [TopicPartition(topic, p) for p in parts]) for g in range(n)]
    rows = 0
    for request in requests:
        future = admin.list_consumer_group_offsets([request])
        for group, f in future.items():
            for tp in f.result().topic_partitions:
                if tp.offset >= 0:
                    print(group, tp.partition, tp.offset, ends[tp.partition] - tp.offset)
                    rows += 1
    probe.close()
    return rows


if __name__ == "__main__":
    what, broker, topic, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    if what == "commit":
        commit(broker, topic, n)
    else:
        lag(broker, topic, n)
