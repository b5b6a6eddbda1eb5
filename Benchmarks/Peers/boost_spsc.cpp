// The peer for RingBench: boost::lockfree::spsc_queue with 64-byte records, measured exactly as
// RingBench measures fieldcap's SPSCRing (same record, capacity, batch size and ping-pong).
//
//   g++ -O2 -std=c++17 -pthread boost_spsc.cpp -o boost_spsc
//   ./boost_spsc [RECORDS] [CAPACITY] [ROUND_TRIPS]
#include <boost/lockfree/spsc_queue.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <stdexcept>
#include <thread>

struct Record64 {
    uint64_t sequence;
    uint64_t payload[7];
};
static_assert(sizeof(Record64) == 64, "a record is one cache line");

static uint64_t now() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

static double throughput(uint64_t records, size_t capacity) {
    boost::lockfree::spsc_queue<Record64> queue(capacity);
    uint64_t start = now();
    std::thread producer([&] {
        for (uint64_t sequence = 0; sequence < records;) {
            Record64 record{sequence, {}};
            if (queue.push(record)) ++sequence;
        }
    });
    Record64 batch[256];
    uint64_t received = 0, checksum = 0;
    while (received < records) {
        size_t n = queue.pop(batch, 256);
        for (size_t i = 0; i < n; ++i) checksum += batch[i].sequence;
        received += n;
    }
    uint64_t elapsed = now() - start;
    producer.join();
    if (checksum != records * (records - 1) / 2) throw std::runtime_error("records lost or reordered");
    return double(records) / (double(elapsed) / 1e9);
}

static double roundTrip(int trips, size_t capacity) {
    boost::lockfree::spsc_queue<Record64> ping(capacity), pong(capacity);
    std::thread echo([&] {
        Record64 record;
        for (int i = 0; i < trips; ++i) {
            while (!ping.pop(record)) {}
            while (!pong.push(record)) {}
        }
    });
    uint64_t start = now();
    for (int i = 0; i < trips; ++i) {
        Record64 record{uint64_t(i), {}}, reply;
        while (!ping.push(record)) {}
        while (!pong.pop(reply)) {}
        if (reply.sequence != uint64_t(i)) throw std::runtime_error("round trip out of order");
    }
    uint64_t elapsed = now() - start;
    echo.join();
    return double(elapsed) / trips;
}

int main(int argc, char** argv) {
    uint64_t records = argc > 1 ? strtoull(argv[1], nullptr, 10) : 50000000;
    size_t capacity = argc > 2 ? strtoull(argv[2], nullptr, 10) : 4096;
    int trips = argc > 3 ? atoi(argv[3]) : 1000000;
    double best = 0;
    for (int i = 0; i < 3; ++i) best = std::max(best, throughput(records, capacity));
    printf("throughput %.0f\n", best);
    printf("roundtrip %.0f\n", roundTrip(trips, capacity));
}
