// fieldcap's Matroska files through libmatroska (see CMatroska.h for why this library).
#include "CMatroska.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <ebml/EbmlHead.h>
#include <ebml/EbmlStream.h>
#include <ebml/EbmlSubHead.h>
#include <ebml/EbmlVoid.h>
#include <ebml/IOCallback.h>
#include <ebml/StdIOCallback.h>
#include <matroska/KaxBlock.h>
#include <matroska/KaxBlockData.h>
#include <matroska/KaxCluster.h>
#include <matroska/KaxCues.h>
#include <matroska/KaxInfo.h>
#include <matroska/KaxInfoData.h>
#include <matroska/KaxSegment.h>
#include <matroska/KaxSemantic.h>
#include <matroska/KaxTrackEntryData.h>
#include <matroska/KaxTrackVideo.h>
#include <matroska/KaxTracks.h>
#include <matroska/KaxVersion.h>

using namespace libebml;
using namespace libmatroska;

namespace {

constexpr uint64_t nanosecondsPerTick = CMATROSKA_NANOSECONDS_PER_TICK;
/// The number of the one track fieldcap writes.
constexpr uint64_t writtenTrackNumber = 1;

/// A system call that failed while libmatroska was writing: thrown through the library's frames.
struct OutputFailure {
    int code;
    const char *operation;
};

/// The file, seen by libebml: writes go to the descriptor in as few system calls as possible.
/// libebml writes an element as its ID, its size and its data in separate calls; the small
/// pieces are gathered here and written together with the next large piece (a frame), which is
/// never copied.
///
/// Where the filesystem does direct I/O, a frame goes from the caller's buffer (a camera's mmap'd
/// buffer) to the disk without the page cache: no copy, no page allocated and zeroed, nothing left
/// for writeback, and the frame is on the device when the call returns. That needs the frame's
/// bytes to start on an aligned file offset, so an EBML Void element before its Cluster takes up
/// the difference (readers skip Void elements; at most an alignment unit per frame). What is not
/// a whole number of units (the headers, a frame's tail) goes through the page cache, on pages
/// the direct writes never touch.
class DescriptorOutput final : public IOCallback {
  public:
    DescriptorOutput(int fd, int directFd) : fd(fd) {
        off_t start = lseek(fd, 0, SEEK_CUR);
        position = start < 0 ? 0 : static_cast<uint64_t>(start);
        pending.reserve(pendingLimit);
        if (directFd >= 0) enableDirect(directFd);
    }

    uint32 read(void *, size_t) override { return 0; }  // written only

    size_t write(const void *bytes, size_t count) override {
        if (count >= gatherLimit) {
            if (alignNext && canWriteDirect(bytes, count)) {
                writeAligned(bytes, count);
            } else {
                writeAll(bytes, count);
            }
        } else {
            if (pending.size() + count > pendingLimit) writeAll(nullptr, 0);
            auto first = static_cast<const uint8_t *>(bytes);
            pending.insert(pending.end(), first, first + count);
            position += count;
        }
        return count;
    }

    void setFilePointer(int64 offset, seek_mode mode) override {
        flush();
        int64 base = 0;
        if (mode == seek_current) {
            base = static_cast<int64>(position);
        } else if (mode == seek_end) {
            struct stat status;
            if (fstat(fd, &status) != 0) throw OutputFailure{errno, "fstat"};
            base = status.st_size;
        }
        if (base + offset < 0) throw OutputFailure{EINVAL, "seek"};
        position = static_cast<uint64_t>(base + offset);
    }

    uint64 getFilePointer() override { return position; }

    void close() override {}  // the descriptors are the caller's

    /// Writes what is gathered.
    void flush() {
        if (!pending.empty()) writeAll(nullptr, 0);
    }

    /// Called with nothing gathered, before a Cluster is rendered: the Cluster's frame may be
    /// aligned with a Void element before it (only there is one allowed).
    void beginCluster() { alignNext = directFd >= 0 && pending.empty(); }
    void endCluster() { alignNext = false; }

    bool writesDirect() const { return directFd >= 0; }

  private:
    /// Below this a write is gathered; a video frame is far above it.
    static constexpr size_t gatherLimit = 4096;
    static constexpr size_t pendingLimit = 64 * 1024;
    /// Below this many aligned bytes a frame goes through the page cache: a direct write waits
    /// for the device, which only pays off for large frames.
    static constexpr size_t directMinimum = 64 * 1024;
    int fd;
    int directFd = -1;
    /// File offsets, lengths and (memAlign) buffer addresses of direct writes are multiples of these.
    uint64_t offsetAlign = 0;
    uint64_t memAlign = 0;
    bool alignNext = false;
    uint64_t position = 0;
    std::vector<uint8_t> pending;
    /// Where a Void and the gathered headers are put together (reused frame after frame).
    std::vector<uint8_t> padded;

    /// An EBML Void element of exactly `length` bytes (at least 2) at `out`: its ID, its size in
    /// the shortest field that holds it, and zeros.
    static void writeVoid(uint8_t *out, uint64_t length) {
        int sizeLength = 1;
        while (sizeLength < 8 && length - 1 - sizeLength > (uint64_t{1} << (7 * sizeLength)) - 2) ++sizeLength;
        uint64_t data = length - 1 - sizeLength;
        out[0] = 0xEC;
        for (int index = sizeLength; index >= 1; --index) {
            out[index] = static_cast<uint8_t>(data & 0xFF);
            data >>= 8;
        }
        out[1] |= static_cast<uint8_t>(0x80 >> (sizeLength - 1));
    }

    /// Direct I/O where the filesystem says how (statx's STATX_DIOALIGN; tmpfs and 9p do not).
    /// Offsets are aligned to whole pages at least, so a page the page cache holds (headers,
    /// tails) is never also written directly.
    void enableDirect(int candidate) {
#ifdef STATX_DIOALIGN
        struct statx info {};
        if (statx(candidate, "", AT_EMPTY_PATH, STATX_DIOALIGN, &info) != 0) return;
        if (!(info.stx_mask & STATX_DIOALIGN) || info.stx_dio_offset_align == 0 || info.stx_dio_mem_align == 0) return;
        long page = sysconf(_SC_PAGESIZE);
        offsetAlign = std::max<uint64_t>(info.stx_dio_offset_align, page > 0 ? static_cast<uint64_t>(page) : 4096);
        memAlign = info.stx_dio_mem_align;
        directFd = candidate;
#else
        (void)candidate;
#endif
    }

    bool canWriteDirect(const void *bytes, size_t count) const {
        return directFd >= 0 && reinterpret_cast<uintptr_t>(bytes) % memAlign == 0 && count / offsetAlign * offsetAlign >= directMinimum;
    }

    /// The gathered Cluster headers behind a Void that ends them on an aligned offset, the
    /// frame's whole units directly, its tail through the page cache.
    void writeAligned(const void *bytes, size_t count) {
        uint64_t pad = (offsetAlign - position % offsetAlign) % offsetAlign;
        if (pad == 1) pad += offsetAlign;  // a Void is at least its ID and a size byte
        if (pad > 0) {
            // The Void, then the headers; the swap leaves the old buffer for the next frame.
            padded.assign(pad, 0);
            writeVoid(padded.data(), pad);
            padded.insert(padded.end(), pending.begin(), pending.end());
            pending.swap(padded);
            position += pad;
        }
        writeAll(nullptr, 0);
        auto frame = static_cast<const uint8_t *>(bytes);
        size_t direct = count / offsetAlign * offsetAlign;
        size_t done = writeDirect(frame, direct);
        writeAll(frame + done, count - done);
    }

    /// Writes `count` bytes at `position` through the direct descriptor; returns how many it
    /// wrote. Stops early, for the page cache to write the rest, when the filesystem or the
    /// buffer refuses direct I/O after all (EINVAL, EFAULT, EOPNOTSUPP), which then stays off.
    size_t writeDirect(const uint8_t *bytes, size_t count) {
        size_t done = 0;
        while (done < count) {
            ssize_t written = ::pwrite(directFd, bytes + done, count - done, static_cast<off_t>(position));
            if (written < 0) {
                if (errno == EINTR) continue;
                if (errno == EINVAL || errno == EFAULT || errno == EOPNOTSUPP) {
                    directFd = -1;
                    break;
                }
                throw OutputFailure{errno, "write"};
            }
            done += static_cast<size_t>(written);
            position += static_cast<uint64_t>(written);
            // A short write that left the rest unaligned: the page cache takes the rest.
            if (written == 0 || position % offsetAlign != 0) break;
        }
        return done;
    }

    /// Writes the gathered bytes (which end at `position`), then `count` bytes from `bytes`,
    /// retrying short writes and EINTR.
    void writeAll(const void *bytes, size_t count) {
        iovec parts[2] = {{pending.data(), pending.size()}, {const_cast<void *>(bytes), count}};
        uint64_t offset = position - pending.size();
        iovec *next = parts;
        int left = 2;
        while (left > 0) {
            while (left > 0 && next->iov_len == 0) ++next, --left;
            if (left == 0) break;
            ssize_t written = ::pwritev(fd, next, left, static_cast<off_t>(offset));
            if (written < 0) {
                if (errno == EINTR) continue;
                int code = errno;
                pending.clear();
                throw OutputFailure{code, "write"};
            }
            offset += static_cast<uint64_t>(written);
            auto done = static_cast<size_t>(written);
            while (left > 0 && done >= next->iov_len) done -= next->iov_len, ++next, --left;
            if (left > 0) {
                next->iov_base = static_cast<uint8_t *>(next->iov_base) + done;
                next->iov_len -= done;
            }
        }
        pending.clear();
        position = offset;
    }
};

/// While a Cluster is rendered, its frame may be aligned (DescriptorOutput::beginCluster).
struct ClusterScope {
    explicit ClusterScope(DescriptorOutput &output) : output(output) { output.beginCluster(); }
    ~ClusterScope() { output.endCluster(); }
    DescriptorOutput &output;
};

void fail(CMatroska_error *error, int code, const char *operation, const char *detail) {
    if (error == nullptr) return;
    error->code = code;
    std::snprintf(error->operation, sizeof error->operation, "%s", operation);
    std::snprintf(error->message, sizeof error->message, "%s", detail);
}

/// Runs `body`, turning what libmatroska or the descriptor throws into `error`.
template <typename Body>
int guarded(CMatroska_error *error, const char *what, Body body) {
    try {
        body();
        return 0;
    } catch (const OutputFailure &failure) {
        fail(error, failure.code, failure.operation, std::strerror(failure.code));
    } catch (const std::exception &exception) {
        fail(error, EIO, what, exception.what());
    } catch (...) {
        fail(error, EIO, what, "libmatroska failed");
    }
    return -1;
}

uint64_t randomTrackUID() {
    uint64_t uid = 0;
    if (getrandom(&uid, sizeof uid, 0) != sizeof uid || uid == 0) uid = 1;
    return uid;
}

}  // namespace

struct CMatroska_writer {
    CMatroska_writer(int fd, int directFd) : output(fd, directFd) {}

    DescriptorOutput output;
    KaxSegment segment;
    KaxTrackEntry *track = nullptr;
    KaxDuration *duration = nullptr;
    /// Only BlockGroups would be indexed in it; it stays empty and is never written.
    KaxCues cues;
    /// Where the Segment's data starts, for its size at the end.
    uint64_t segmentDataStart = 0;
};

extern "C" int CMatroska_open_direct(const char *path, int fd) {
    int direct = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC | O_NOFOLLOW);
    if (direct < 0) return -1;
    struct stat opened, reopened;
    if (fstat(fd, &opened) != 0 || fstat(direct, &reopened) != 0 || opened.st_dev != reopened.st_dev ||
        opened.st_ino != reopened.st_ino) {
        ::close(direct);
        return -1;
    }
    return direct;
}

extern "C" int CMatroska_filesystem_type(const char *path, uint64_t *type) {
    struct statfs stats;
    if (statfs(path, &stats) != 0) return -1;
    // f_type is signed on some ABIs: the magic numbers are 32-bit patterns.
    *type = static_cast<uint32_t>(stats.f_type);
    return 0;
}

extern "C" CMatroska_writer *CMatroska_create(int fd, int direct_fd, const CMatroska_video_track *description,
                                              const char *writingApp, CMatroska_error *error) {
    auto writer = std::make_unique<CMatroska_writer>(fd, direct_fd);
    int result = guarded(error, "writing the Matroska header", [&] {
        auto &output = writer->output;
        EbmlHead head;
        GetChild<EDocType>(head).SetValue("matroska");
        // SimpleBlock needs version 2 to write and to read.
        GetChild<EDocTypeVersion>(head).SetValue(2);
        GetChild<EDocTypeReadVersion>(head).SetValue(2);
        head.Render(output, true);

        // The Segment's size is not known until the end: it is written as "unknown" (all value
        // bits set), so that a file whose recorder was killed still reads to its last cluster.
        // libebml writes an unknown size as zero, hence the overwrite with the real marker.
        auto &segment = writer->segment;
        segment.SetSizeInfinite(true);
        segment.WriteHead(output, 8);
        segment.ForceSize(0x00FF'FFFF'FFFF'FFFF);
        segment.OverwriteHead(output);
        writer->segmentDataStart = output.getFilePointer();

        auto &info = GetChild<KaxInfo>(segment);
        GetChild<KaxTimecodeScale>(info).SetValue(nanosecondsPerTick);
        auto &duration = GetChild<KaxDuration>(info);
        // Eight bytes now, so the real duration fits in the same place at the end.
        duration.SetPrecision(EbmlFloat::FLOAT_64);
        duration.SetValue(0.0);
        writer->duration = &duration;
        GetChild<KaxMuxingApp>(info).SetValueUTF8("libmatroska " + KaxCodeVersion);
        GetChild<KaxWritingApp>(info).SetValueUTF8(writingApp);
        info.Render(output, true);

        auto &tracks = GetChild<KaxTracks>(segment);
        auto &track = GetChild<KaxTrackEntry>(tracks);
        track.SetGlobalTimecodeScale(nanosecondsPerTick);
        GetChild<KaxTrackNumber>(track).SetValue(writtenTrackNumber);
        // Always 8 bytes: a random UID with a leading zero byte would otherwise shrink the
        // header, and two files written alike must lay out alike (salvage finishes in place).
        auto &uid = GetChild<KaxTrackUID>(track);
        uid.SetDefaultSize(8);
        uid.SetValue(randomTrackUID());
        GetChild<KaxTrackType>(track).SetValue(track_video);
        GetChild<KaxCodecID>(track).SetValue(description->codec_id);
        GetChild<KaxTrackFlagLacing>(track).SetValue(0);
        GetChild<KaxTrackLanguage>(track).SetValue("und");
        if (description->default_duration_ns > 0) {
            GetChild<KaxTrackDefaultDuration>(track).SetValue(description->default_duration_ns);
        }
        auto &video = GetChild<KaxTrackVideo>(track);
        GetChild<KaxVideoPixelWidth>(video).SetValue(description->width);
        GetChild<KaxVideoPixelHeight>(video).SetValue(description->height);
        if (description->colour_space != nullptr) {
            GetChild<KaxVideoColourSpace>(video).CopyBuffer(description->colour_space, 4);
        }
        if (description->codec_private != nullptr && description->codec_private_size > 0) {
            GetChild<KaxCodecPrivate>(track).CopyBuffer(
                description->codec_private, static_cast<uint32>(description->codec_private_size));
        }
        writer->track = &track;
        tracks.Render(output, false);
        output.flush();
    });
    return result == 0 ? writer.release() : nullptr;
}

extern "C" int CMatroska_write_frame(CMatroska_writer *writer, const void *bytes, size_t count,
                                     uint64_t timestampMs, bool keyframe, CMatroska_error *error) {
    return guarded(error, "writing a frame", [&] {
        KaxCluster cluster;
        cluster.SetParent(writer->segment);
        cluster.InitTimecode(timestampMs, nanosecondsPerTick);
        // The cluster owns (and deletes) the block, the block its DataBuffer; the DataBuffer
        // only points at the caller's bytes.
        auto block = new KaxSimpleBlock();
        cluster.PushElement(*block);
        block->SetParent(cluster);
        auto frame = new DataBuffer(static_cast<binary *>(const_cast<void *>(bytes)), static_cast<uint32>(count));
        block->AddFrame(*writer->track, timestampMs * nanosecondsPerTick, *frame, LACING_NONE);
        block->SetKeyframe(keyframe);
        {
            ClusterScope scope(writer->output);
            cluster.Render(writer->output, writer->cues, false);
        }
        writer->output.flush();
    });
}

extern "C" int CMatroska_finish(CMatroska_writer *writer, double durationMs, CMatroska_error *error) {
    return guarded(error, "finishing the Matroska file", [&] {
        auto &output = writer->output;
        output.flush();
        writer->duration->SetValue(durationMs);
        writer->duration->OverwriteData(output);
        output.setFilePointer(0, seek_end);
        auto &segment = writer->segment;
        segment.SetSizeInfinite(true);
        if (segment.ForceSize(output.getFilePointer() - writer->segmentDataStart)) segment.OverwriteHead(output);
        output.flush();
    });
}

extern "C" bool CMatroska_writes_direct(const CMatroska_writer *writer) { return writer->output.writesDirect(); }

extern "C" uint64_t CMatroska_position(const CMatroska_writer *writer) {
    return const_cast<CMatroska_writer *>(writer)->output.getFilePointer();
}

extern "C" void CMatroska_free(CMatroska_writer *writer) { delete writer; }

namespace {

/// Reads a master element's children, keeping those read before a failure (a file cut short).
/// Returns false when reading failed and nothing after this element can be trusted.
bool readChildren(EbmlStream &stream, EbmlMaster &master, ScopeMode scope = SCOPE_ALL_DATA) {
    int upper = 0;
    EbmlElement *found = nullptr;
    try {
        master.Read(stream, EBML_CONTEXT(&master), upper, found, true, scope);
    } catch (...) {
        delete found;
        return false;
    }
    // An element of an upper level ends a master of unknown size; fieldcap's (and FFmpeg's)
    // clusters have known sizes, so this is damage: stop there.
    if (found != nullptr) {
        delete found;
        return false;
    }
    return true;
}

/// The first video track's entry, or nullptr.
KaxTrackEntry *videoTrack(KaxTracks &tracks) {
    for (auto child : tracks) {
        if (EbmlId(*child) != EBML_ID(KaxTrackEntry)) continue;
        auto &entry = *static_cast<KaxTrackEntry *>(child);
        auto type = FindChild<KaxTrackType>(entry);
        auto number = FindChild<KaxTrackNumber>(entry);
        if (type != nullptr && number != nullptr && type->GetValue() == track_video) return &entry;
    }
    return nullptr;
}

/// A frame met by walkFrames.
struct WalkedFrame {
    /// Its bytes, when the walk reads them (valid during the call only).
    const uint8_t *bytes;
    uint64_t size;
    /// Its time in nanoseconds on the file's timeline.
    uint64_t timeNs;
    /// Where the Cluster holding it ends in the file.
    uint64_t clusterEnd;
    /// A decoder can start at it (a SimpleBlock's keyframe flag; a BlockGroup without a
    /// ReferenceBlock).
    bool keyframe;
};

/// What walkFrames learned about the file besides its frames: what it is, and where the fields
/// are that a cut changes.
struct WalkedFile {
    bool isMatroska = false;
    bool hasVideoTrack = false;
    uint64_t fileSize = 0;
    uint64_t segmentSizePosition = 0;
    int segmentSizeLength = 0;
    bool segmentSizeFinite = false;
    uint64_t segmentDataStart = 0;
    /// Where the first Cluster starts (without one: where the elements before it end).
    uint64_t firstClusterPosition = 0;
    /// Where the 8-byte Duration's value is (0: none of that size), and the timestamp unit.
    uint64_t durationPosition = 0;
    uint64_t scale = nanosecondsPerTick;
    /// The Info element's WritingApp.
    std::string writingApp;
    /// The video track's CodecPrivate.
    std::vector<uint8_t> codecPrivate;
    /// The Segment holds elements besides Info, Tracks, Clusters and Voids (a SeekHead, Cues...).
    bool otherElements = false;
};

/// Walks the frames of the file's (first) video track in file order and calls `onFrame` with
/// each, until it returns false. The walk ends quietly at the end of the file and at the first
/// element that is cut short, cannot be read, or does not start where the one before it ended:
/// a power cut can leave a block of zeros where a Cluster's header was, and libebml would look
/// for the next element beyond it, in the frames' bytes or at a later Cluster, which would then
/// be numbered as this one. With SCOPE_PARTIAL_DATA only each block's header is read, not its
/// frames. Returns how many frames went to `onFrame`, or -1 with `error` filled when the file
/// cannot be opened.
template <typename OnFrame>
long walkFrames(const char *path, ScopeMode scope, WalkedFile &file, OnFrame onFrame, CMatroska_error *error) {
    struct stat status;
    if (stat(path, &status) != 0) {
        fail(error, errno, "stat", std::strerror(errno));
        return -1;
    }
    file.fileSize = static_cast<uint64_t>(status.st_size);
    std::unique_ptr<StdIOCallback> input;
    if (guarded(error, "open", [&] { input = std::make_unique<StdIOCallback>(path, MODE_READ); }) != 0) return -1;
    long frames = 0;
    // Whatever goes wrong past the header ends the walk: the frames before it are the result.
    try {
        EbmlStream stream(*input);
        // The sizes are sanity limits: the header is a few dozen bytes, a finished Segment is the
        // whole file (an unfinished one's size is "unknown", which passes any limit).
        // libebml's FindNextID hands back an EbmlDummy for whatever ID it finds first: a file
        // whose magic was damaged would then be read as an EBML header by the cast below, and
        // libebml dereferences what it is not (#42: SIGSEGV in EbmlMaster::FindFirstElt). Only
        // an element with the header's own ID is one.
        std::unique_ptr<EbmlElement> head(stream.FindNextID(EBML_INFO(EbmlHead), 4096));
        if (!head || EbmlId(*head) != EBML_ID(EbmlHead) || head->GetElementPosition() != 0 || !head->IsFiniteSize()) {
            return 0;
        }
        auto &header = *static_cast<EbmlHead *>(head.get());
        if (readChildren(stream, header)) {
            auto docType = FindChild<EDocType>(header);
            std::string type = docType != nullptr ? std::string(*docType) : std::string();
            file.isMatroska = type == "matroska" || type == "webm";
        }
        if (!file.isMatroska) return 0;
        input->setFilePointer(static_cast<int64>(head->GetEndPosition()), seek_beginning);
        std::unique_ptr<EbmlElement> segment(stream.FindNextID(EBML_INFO(KaxSegment), UINT64_MAX));
        if (!segment || EbmlId(*segment) != EBML_ID(KaxSegment) || segment->GetElementPosition() != head->GetEndPosition()) {
            return 0;
        }
        const auto idLength = EBML_ID_LENGTH(static_cast<const EbmlId &>(*segment));
        file.segmentSizePosition = segment->GetElementPosition() + idLength;
        file.segmentSizeLength = segment->HeadSize() - idLength;
        file.segmentSizeFinite = segment->IsFiniteSize();
        file.segmentDataStart = input->getFilePointer();
        // Until a Tracks element says otherwise, the track fieldcap writes.
        uint64_t track = writtenTrackNumber;
        uint64_t expected = file.segmentDataStart;
        int upper = 0;
        bool stop = false;
        while (!stop) {
            std::unique_ptr<EbmlElement> element(
                stream.FindNextElement(EBML_CONTEXT(segment.get()), upper, UINT64_MAX, true));
            if (!element || upper > 0) break;  // the end, or past this Segment
            if (element->GetElementPosition() != expected || !element->IsFiniteSize()) break;
            upper = 0;
            const uint64_t end = element->GetEndPosition();
            const EbmlId id(*element);
            if (id == EBML_ID(KaxInfo)) {
                auto &info = *static_cast<KaxInfo *>(element.get());
                if (!readChildren(stream, info)) break;
                if (auto timecodeScale = FindChild<KaxTimecodeScale>(info)) file.scale = timecodeScale->GetValue();
                if (auto app = FindChild<KaxWritingApp>(info)) file.writingApp = app->GetValueUTF8();
                auto duration = FindChild<KaxDuration>(info);
                if (duration != nullptr && duration->IsFiniteSize() && duration->GetSize() == 8) {
                    file.durationPosition = duration->GetElementPosition() + duration->HeadSize();
                }
            } else if (id == EBML_ID(KaxTracks)) {
                auto &tracks = *static_cast<KaxTracks *>(element.get());
                if (!readChildren(stream, tracks)) break;
                if (auto entry = videoTrack(tracks)) {
                    file.hasVideoTrack = true;
                    track = FindChild<KaxTrackNumber>(*entry)->GetValue();
                    if (auto setup = FindChild<KaxCodecPrivate>(*entry)) {
                        file.codecPrivate.assign(setup->GetBuffer(), setup->GetBuffer() + setup->GetSize());
                    }
                }
            } else if (id == EBML_ID(KaxCluster)) {
                if (file.firstClusterPosition == 0) file.firstClusterPosition = element->GetElementPosition();
                // A Cluster that runs past the end of the file was cut short: its frames, and
                // the rest, are not whole.
                if (end > file.fileSize) break;
                auto &cluster = *static_cast<KaxCluster *>(element.get());
                bool whole = readChildren(stream, cluster, scope);
                auto timecode = FindChild<KaxClusterTimecode>(cluster);
                if (timecode == nullptr) break;
                cluster.InitTimecode(timecode->GetValue(), static_cast<int64>(file.scale));
                for (auto child : cluster) {
                    KaxInternalBlock *block = nullptr;
                    bool keyframe = true;
                    if (EbmlId(*child) == EBML_ID(KaxSimpleBlock)) {
                        block = static_cast<KaxSimpleBlock *>(child);
                        keyframe = static_cast<KaxSimpleBlock *>(child)->IsKeyframe();
                    } else if (EbmlId(*child) == EBML_ID(KaxBlockGroup)) {
                        auto &group = *static_cast<KaxBlockGroup *>(child);
                        block = FindChild<KaxBlock>(group);
                        keyframe = FindChild<KaxReferenceBlock>(group) == nullptr;
                    }
                    if (block == nullptr || block->TrackNum() != track) continue;
                    // A block that could not be read whole has no frames (with its bytes read,
                    // libmatroska marks it; without, its header is all there is to check).
                    if (scope == SCOPE_ALL_DATA ? !block->ValueIsSet() : block->NumberFrames() == 0) continue;
                    block->SetParent(cluster);
                    // A time before the timeline's start (a negative block offset) counts as 0.
                    auto time = block->GlobalTimecode();
                    if (time > static_cast<uint64_t>(INT64_MAX)) time = 0;
                    for (unsigned index = 0; index < block->NumberFrames() && !stop; index++) {
                        WalkedFrame frame{nullptr, 0, time, end, keyframe};
                        if (scope == SCOPE_ALL_DATA) {
                            auto &buffer = block->GetBuffer(index);
                            frame.bytes = buffer.Buffer();
                            frame.size = buffer.Size();
                        } else {
                            auto size = block->GetFrameSize(index);
                            if (size < 0) break;
                            frame.size = static_cast<uint64_t>(size);
                        }
                        ++frames;
                        stop = !onFrame(frame);
                    }
                    if (stop) break;
                }
                if (!whole) break;
            } else if (id != EBML_ID(EbmlVoid)) {
                file.otherElements = true;
            }
            expected = end;
            input->setFilePointer(static_cast<int64>(end), seek_beginning);
        }
        if (file.firstClusterPosition == 0) file.firstClusterPosition = expected;
    } catch (...) {
    }
    return frames;
}

}  // namespace

extern "C" long CMatroska_read_frames(const char *path, CMatroska_frame_handler handler, void *context,
                                      CMatroska_error *error) {
    WalkedFile file;
    return walkFrames(path, SCOPE_ALL_DATA, file, [&](const WalkedFrame &frame) {
        return handler(context, frame.bytes, frame.size, frame.timeNs, frame.keyframe) == 0;
    }, error);
}

extern "C" long CMatroska_scan_frames(const char *path, CMatroska_file_info *info, CMatroska_frame_seen handler,
                                      void *context, CMatroska_error *error) {
    WalkedFile file;
    uint64_t framesEnd = 0;
    long frames = walkFrames(path, SCOPE_PARTIAL_DATA, file, [&](const WalkedFrame &frame) {
        framesEnd = frame.clusterEnd;
        return handler == nullptr || handler(context, frame.size, frame.timeNs) == 0;
    }, error);
    if (info != nullptr) {
        info->is_matroska = file.isMatroska;
        info->has_video_track = file.hasVideoTrack;
        info->frames_end = framesEnd;
        info->file_size = file.fileSize;
    }
    return frames;
}

extern "C" long CMatroska_codec_private(const char *path, uint8_t *buffer, size_t capacity, CMatroska_error *error) {
    WalkedFile file;
    // The Tracks come before the first Cluster: the walk can stop at the first frame.
    if (walkFrames(path, SCOPE_PARTIAL_DATA, file, [](const WalkedFrame &) { return false; }, error) < 0) return -1;
    if (!file.hasVideoTrack) {
        fail(error, EINVAL, "reading the Tracks", "the file has no video track");
        return -1;
    }
    std::memcpy(buffer, file.codecPrivate.data(), std::min(capacity, file.codecPrivate.size()));
    return static_cast<long>(file.codecPrivate.size());
}

namespace {

/// Writes `count` bytes at `offset`, retrying short writes and EINTR.
void writeAt(int fd, const uint8_t *bytes, size_t count, uint64_t offset) {
    while (count > 0) {
        ssize_t written = ::pwrite(fd, bytes, count, static_cast<off_t>(offset));
        if (written < 0) {
            if (errno == EINTR) continue;
            throw OutputFailure{errno, "write"};
        }
        bytes += written;
        count -= static_cast<size_t>(written);
        offset += static_cast<uint64_t>(written);
    }
}

}  // namespace

extern "C" int CMatroska_finish_in_place(const char *path, long keep, double frame_period_ms, const char *writing_app,
                                         CMatroska_error *error) {
    WalkedFile file;
    long seen = 0;
    uint64_t cutAt = 0, lastTime = 0;
    long frames = walkFrames(path, SCOPE_PARTIAL_DATA, file, [&](const WalkedFrame &frame) {
        if (seen == keep) return false;
        ++seen;
        cutAt = frame.clusterEnd;
        lastTime = frame.timeNs;
        return true;
    }, error);
    // A file that is not there has nothing to finish.
    if (frames < 0) return error != nullptr && error->code == ENOENT ? 1 : -1;
    // Only the layout CMatroska_create writes: its Segment size and Duration have room for their
    // final values, and nothing (a SeekHead, Cues) points past the cut.
    if (!file.isMatroska || !file.hasVideoTrack || file.writingApp != writing_app || file.otherElements ||
        file.segmentSizeLength != 8 || file.durationPosition == 0 || file.scale == 0 || seen < keep) {
        return 1;
    }
    if (keep == 0) cutAt = file.firstClusterPosition;
    if (cutAt < file.segmentDataStart) return 1;
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        fail(error, errno, "open", std::strerror(errno));
        return -1;
    }
    int result = guarded(error, "finishing the Matroska file in place", [&] {
        if (cutAt < file.fileSize && ftruncate(fd, static_cast<off_t>(cutAt)) != 0) throw OutputFailure{errno, "ftruncate"};
        uint64_t size = cutAt - file.segmentDataStart;
        uint8_t field[8];
        for (int index = 7; index >= 0; --index, size >>= 8) field[index] = static_cast<uint8_t>(size & 0xFF);
        field[0] = 0x01;  // an 8-byte size (the value fits in its 56 bits)
        writeAt(fd, field, sizeof field, file.segmentSizePosition);
        // As CMatroska_finish's caller gives it: to the last frame, plus its share.
        double ticks = keep == 0 ? 0 : static_cast<double>(lastTime / file.scale) + frame_period_ms;
        uint64_t bits;
        std::memcpy(&bits, &ticks, sizeof bits);
        for (int index = 7; index >= 0; --index, bits >>= 8) field[index] = static_cast<uint8_t>(bits & 0xFF);
        writeAt(fd, field, sizeof field, file.durationPosition);
        if (fsync(fd) != 0) throw OutputFailure{errno, "fsync"};
    });
    ::close(fd);
    return result;
}
