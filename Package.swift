// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "fieldcap",
    products: [
        // The Linux counterpart of the SyncField Swift SDK 0.1: same API, same bytes.
        .library(name: "SyncField", targets: ["SyncField"]),
        // Recording from a program of one's own: device plans, the RecordingController, the
        // session's layout, recovery.
        .library(name: "FieldcapSession", targets: ["FieldcapSession"]),
        // Sessions in the field's layouts, for a program of one's own: MCAP, EuRoC, image folders.
        .library(name: "FieldcapExport", targets: ["FieldcapExport"]),
        // What a rig holds, for a program of one's own: listing, deleting, extracting a range.
        .library(name: "FieldcapArchive", targets: ["FieldcapArchive"]),
        // A rig for a program of one's own: its devices, one recording at a time on command, the
        // events of each, the preview; what `serve`, the capture-server client and the fleet drive.
        .library(name: "FieldcapRig", targets: ["FieldcapRig"]),
        // A rig over the network, for a program of one's own: the API, the events, the recording on command.
        .library(name: "FieldcapService", targets: ["FieldcapService"]),
        // Live preview of a camera, for a program of one's own: the frame tap's JPEGs.
        .library(name: "FieldcapPreview", targets: ["FieldcapPreview"]),
        .executable(name: "fieldcap", targets: ["fieldcap"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        // Percentiles for the benchmarks: the histogram the latency field trusts.
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.1.0"),
        // Counts malloc calls so a test can prove the fixed-shape hot path allocates nothing.
        .package(url: "https://github.com/ordo-one/malloc-interposer", from: "1.6.0"),
        // `fieldcap serve`: Hummingbird 2 rather than Vapor. Both stand on SwiftNIO; Hummingbird is
        // the smaller (no ORM, templating or Foundation networking pulled in, a rig binary to
        // keep small), async/await throughout, with its WebSocket package for the events and
        // an in-process test client. swift-service-lifecycle runs it and turns SIGTERM into a
        // graceful shutdown that finishes the recording; NIO's thread pool reads files for the
        // tar downloads off the server's threads.
        // Without its default traits: FullFoundation (URL-encoded forms' dates through
        // DateFormatter) would link full Foundation and its ICU data into the rig binary, and
        // ConfigurationSupport swift-configuration; fieldcap uses neither (#25).
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.20.0", traits: []),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        // TLS for the clients (https uploads, wss:// capture servers): SwiftNIO's, already under
        // hummingbird-websocket's client.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.29.0"),
        // Hummingbird's header types, named directly for the preview's own headers.
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
    ],
    targets: [
        // The house's system tools, below every layer: the syscall seam and its EINTR policy, named
        // threads, the latch and doorbell (pipes polled with the devices) that wake them, path names.
        .target(name: "FieldcapSystem", dependencies: ["CFieldcapLinux"]),
        // Bytes to files, for the SDK's writer and fieldcap's own files alike: the JSON spellings
        // and key order Foundation's JSONSerialization writes (without Foundation's ICU data), line
        // files written in batches and synced, a file replaced whole.
        .target(name: "FieldcapOutput", dependencies: ["FieldcapSystem"]),
        .target(name: "SyncField", dependencies: ["FieldcapSystem", "FieldcapOutput"]),
        // Records, the SPSC ring, clock mapping, the recorder pipeline: no C dependencies.
        .target(name: "FieldcapCore", dependencies: ["FieldcapOutput", "FieldcapSystem", "SyncField"]),
        // What `fieldcap bench` measures with: jitter statistics, the timestamp simulation and the
        // peers' strategies it compares fieldcap with. Nothing on the capture path uses it.
        .target(
            name: "FieldcapBench",
            dependencies: ["FieldcapCore", "SyncField", .product(name: "Histogram", package: "hdrhistogram-swift")]),
        // libmatroska (Debian: libmatroska-dev, libebml-dev) writes the Matroska video files, each
        // frame straight from the camera's mmap'd buffer in one writev, and reads a killed
        // recording's back (Sources/1-Platform/CMatroska says why not FFmpeg's libavformat). A C interface
        // over the C++ library, for Swift.
        .target(
            name: "CMatroska",
            linkerSettings: [.linkedLibrary("matroska"), .linkedLibrary("ebml"), .linkedLibrary("stdc++")]),
        .target(
            name: "FieldcapMedia",
            dependencies: ["FieldcapOutput", "FieldcapSystem", "CMatroska", "FieldcapCore", "SyncField"]),
        // What Glibc's Swift module lacks for the capture loops (epoll): the general Linux seam.
        .target(name: "CFieldcapLinux"),
        // libv4l2 (Debian: libv4l-dev) and the kernel's V4L2 headers.
        .systemLibrary(name: "CV4L2", pkgConfig: "libv4l2", providers: [.apt(["libv4l-dev"])]),
        .target(name: "FieldcapV4L2", dependencies: ["CV4L2", "FieldcapSystem", "FieldcapCore"]),
        // libiio 0.24 (Debian: libiio-dev) for IIO IMUs.
        .systemLibrary(name: "CIIO", pkgConfig: "libiio", providers: [.apt(["libiio-dev"])]),
        .target(
            name: "FieldcapIIO",
            dependencies: ["CIIO", "CFieldcapLinux", "FieldcapSystem", "FieldcapCore", "SyncField"]),
        // Recording in segments: which record goes into which segment, the recording's index,
        // the storage budget. The session layer gives it the segments' files.
        .target(
            name: "FieldcapSegments", dependencies: ["FieldcapOutput", "FieldcapSystem", "FieldcapCore", "SyncField"]),
        // How well the host's wall clock is disciplined, asked of chronyd and ptp4l through their
        // own tools (chronyc, pmc): the bound on its error beside each sync point.
        .target(name: "FieldcapClockQuality", dependencies: ["FieldcapSystem", "FieldcapCore", "SyncField"]),
        // Streams other programs feed over a local socket (JSON lines): no C dependencies.
        .target(name: "FieldcapFeeds", dependencies: ["FieldcapSystem", "FieldcapCore", "SyncField"]),
        // Marks from GPIO lines (a button, another system's trigger): the kernel's GPIO character
        // device (uAPI v2) through CFieldcapLinux, each edge's kernel time mapped into RAW.
        .target(name: "FieldcapGPIO", dependencies: ["FieldcapSystem", "FieldcapCore", "SyncField"]),
        // libmosquitto (Debian: libmosquitto-dev): the MQTT client of Eclipse Mosquitto, the
        // reference broker; no Swift MQTT client is among the offline packages, and libmosquitto
        // is what the field's C and Python tools (mosquitto_pub, paho's peers) are measured against.
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        // Many rigs, one capture: the rigs of a fleet on an MQTT broker.
        .target(
            name: "FieldcapFleet",
            dependencies: [
                "FieldcapSystem", "CMosquitto", "FieldcapCore", "FieldcapSession", "FieldcapRig", "SyncField",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The application layer every front end drives: device plans and rig configs, the
        // recording's lifecycle, the session's layout and sidecar, finishing and recovering.
        .target(
            name: "FieldcapSession",
            dependencies: [
                "FieldcapOutput",
                "FieldcapSystem",
                "SyncField", "FieldcapCore", "FieldcapMedia", "FieldcapV4L2", "FieldcapIIO", "FieldcapFeeds",
                "FieldcapGPIO",
                "FieldcapSegments",
                "FieldcapHotplug", "FieldcapCalibration", "FieldcapEncode", "FieldcapYAML", "FieldcapClockQuality",
                "CPNG",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // What a root of recordings holds, read from indexes and sidecars: the sessions browser,
        // deleting by name or age, and extracting a wall-clock range across segments.
        .target(
            name: "FieldcapArchive",
            dependencies: [
                "FieldcapOutput",
                "FieldcapSystem", "CArchive", "SyncField", "FieldcapCore", "FieldcapMedia", "FieldcapSegments",
                "FieldcapSession", "FieldcapFaces",
            ]),
        // libjpeg-turbo's TurboJPEG API (Debian: libturbojpeg0-dev): the live preview's JPEGs.
        // libjpeg-turbo is the JPEG codec the field runs (browsers, FFmpeg's mjpeg decoder via
        // libjpeg, µStreamer); its YUV-planes entry point takes a camera's 4:2:2 and 4:2:0 frames
        // without a colour conversion, which FFmpeg's mjpeg encoder (a swscale pass) cannot.
        .systemLibrary(
            name: "CTurboJPEG", pkgConfig: "libturbojpeg", providers: [.apt(["libturbojpeg0-dev"])]),
        // FFmpeg's libavcodec for lossless FFV1 (Debian: libavcodec-dev): FFmpeg's own codec, the
        // one FFV1 is defined by (RFC 9043) and every reader decodes with. Built with its headers,
        // loaded with dlopen when an FFV1 stream is first encoded or decoded, so a rig that never
        // asks for it does not map FFmpeg's libraries (Sources/1-Platform/CAVCodec/include).
        .target(name: "CAVCodec", linkerSettings: [.linkedLibrary("dl")]),
        // Compressing frames: libjpeg-turbo's JPEG from a camera's own planes, shared by the
        // recorder's encoding workers, the live preview and the image-folder export; lossless FFV1;
        // the worker stage that encodes a camera's frames beside its writer without ever holding
        // capture.
        .target(
            name: "FieldcapEncode",
            dependencies: [
                "FieldcapSystem", "CTurboJPEG", "CAVCodec", "CFieldcapLinux", "FieldcapCore", "FieldcapV4L2",
                "SyncField",
            ]),
        // OpenSSL's libcrypto (Debian: libssl-dev): the SHA-256 the face model's files are checked
        // by; already in every rig's process (libmosquitto, libssl), so it costs the binary nothing.
        .systemLibrary(name: "CLibcrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // Faces covered before frames leave the rig: the detector (loaded, never linked: its C++
        // over OpenCV, Sources/1-Platform/CFaceDetector, is built by scripts/build-face-detector as a
        // plain shared object, since SwiftPM would link a dynamic product with the Swift runtime a
        // rig running the static fieldcap lacks), the tracker that carries faces between
        // detections, the pixelation of each frame layout; an MJPEG or FFV1 camera's frames decoded
        // and written again around it with FieldcapEncode's codecs.
        .target(
            name: "FieldcapFaces",
            dependencies: ["FieldcapSystem", "FieldcapCore", "FieldcapEncode", "CLibcrypto"]),
        // Live preview: each camera's newest frame, taken from its writer only when a viewer
        // waits, encoded on a thread of its own.
        .target(
            name: "FieldcapPreview",
            dependencies: [
                "FieldcapSystem", "FieldcapEncode", "CFieldcapLinux", "FieldcapCore", "SyncField", "FieldcapFaces",
            ]),
        // Avahi's client library (Debian: libavahi-client-dev): DNS-SD announcements through the
        // system's avahi-daemon, not an mDNS responder of our own.
        .systemLibrary(name: "CAvahi", pkgConfig: "avahi-client", providers: [.apt(["libavahi-client-dev"])]),
        // Discovery: the rig announced on the local network (DNS-SD over mDNS, `_fieldcap._tcp`).
        .target(
            name: "FieldcapDiscovery",
            dependencies: ["CAvahi", "FieldcapSystem", .product(name: "Logging", package: "swift-log")]),
        // systemd's libudev (Debian: libudev-dev): what udev's own users trust to hear devices come
        // and go; it reads the kernel's uevents as well when no udevd runs.
        .systemLibrary(name: "CUdev", pkgConfig: "libudev", providers: [.apt(["libudev-dev"])]),
        // Devices that come back after an unplug: which physical device a node is, and a wake when
        // one of a subsystem is added.
        .target(name: "FieldcapHotplug", dependencies: ["CUdev", "FieldcapSystem"]),
        // The rig every front end drives (`serve`'s API, the capture-server client, the fleet):
        // its devices checked once, one recording at a time on its own thread, the events of each
        // pushed to whoever watches, the cameras' preview while idle, a stop the disk holds given up.
        .target(
            name: "FieldcapRig",
            dependencies: [
                "CFieldcapLinux", "FieldcapSystem", "SyncField", "FieldcapCore", "FieldcapSession", "FieldcapSegments",
                "FieldcapGPIO", "FieldcapPreview", "FieldcapFaces", .product(name: "Logging", package: "swift-log"),
            ]),
        // What the network clients share: a failed connection in a user's words, and one HTTP/1.1
        // request with a streamed body (SwiftNIO's HTTP/1 codec, NIOSSL for https).
        .target(
            name: "FieldcapNetworking",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]),
        // Clients of the SyncField alignment service: the volume-mounted request body built from
        // sessions' manifests, and the file upload.
        .target(
            name: "FieldcapSyncService",
            dependencies: [
                "FieldcapSystem", "FieldcapOutput", "SyncField", "FieldcapSession", "FieldcapSegments",
                "FieldcapNetworking",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]),
        // Clients of AllSpark-style capture servers: the WebSocket protocol of the AllSpark iOS
        // app, over hummingbird-websocket's client (swift-websocket, the same WebSocket code as
        // the events' server side, with NIOSSL for wss://).
        .target(
            name: "FieldcapCaptureServer",
            dependencies: [
                "FieldcapSystem", "FieldcapCore", "FieldcapRig", "FieldcapSession", "FieldcapSegments",
                "FieldcapArchive",
                "FieldcapDiscovery", "FieldcapNetworking", "FieldcapExport", "FieldcapFaces",
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // libyaml (Debian: libyaml-dev): the YAML parser under PyYAML's C loader and under Yams,
        // which fieldcap used before: Yams imports all of Foundation, and with it ICU's 30 MB of
        // locale data, into a binary that never needs a locale (#25).
        .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
        // YAML documents as nodes that know their line, for the rig config and calibration files.
        .target(name: "FieldcapYAML", dependencies: ["CYAML"]),
        // A camera's calibration (Kalibr camchains, OpenCV calibration files), kept with the session.
        .target(name: "FieldcapCalibration", dependencies: ["FieldcapCore", "FieldcapYAML"]),
        // The C libraries of the exports: libzstd and liblz4 (MCAP's two chunk codecs), zlib
        // (MCAP's CRC-32). Debian: libzstd-dev, liblz4-dev, zlib1g-dev.
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(name: "CLZ4", pkgConfig: "liblz4", providers: [.apt(["liblz4-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // libpng (Debian: libpng-dev), the reference PNG codec, for the EuRoC folders' PNG files
        // (8- and 16-bit grey, RGB). A C function around it, as libpng reports errors by longjmp.
        .target(name: "CPNG", linkerSettings: [.linkedLibrary("png16")]),
        // `fieldcap export`: sessions as MCAP (ROS 2), EuRoC folders and image folders. Reads
        // finished sessions only, never the capture path. The image folders' JPEGs are the
        // preview's encoder (libjpeg-turbo), which also turns YUV into RGB.
        .target(
            name: "FieldcapExport",
            dependencies: [
                "FieldcapSystem",
                "SyncField", "FieldcapCore", "FieldcapMedia", "FieldcapSession", "FieldcapSegments", "FieldcapArchive",
                "FieldcapCalibration", "FieldcapEncode", "FieldcapFaces", "CAVCodec", "CFieldcapLinux", "CZstd", "CLZ4",
                "CZlib", "CPNG", "CTurboJPEG",
            ]),
        // `fieldcap check-sync`: the time offset between each camera and gyroscope of a session,
        // measured from the images' motion against the gyroscope's. Pure Swift math; the session
        // is read with the exports' readers.
        .target(
            name: "FieldcapSyncCheck",
            dependencies: [
                "FieldcapCore", "FieldcapSession", "FieldcapSegments", "FieldcapCalibration", "FieldcapExport",
                "SyncField",
            ]),
        // libarchive (Debian: libarchive-dev) writes the tar streams the service sends.
        .systemLibrary(name: "CArchive", pkgConfig: "libarchive", providers: [.apt(["libarchive-dev"])]),
        // `fieldcap serve`: the HTTP API and its events over Hummingbird, a recording on command.
        .target(
            name: "FieldcapService",
            dependencies: [
                "FieldcapSystem",
                "SyncField", "FieldcapCore", "FieldcapSession", "FieldcapArchive", "FieldcapPreview",
                "FieldcapDiscovery", "FieldcapRig",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // The web page ships inside the binary, as the udev rules do.
            resources: [.embedInCode("Web/index.html"), .embedInCode("Web/openapi.yaml")]),
        .executableTarget(
            name: "fieldcap",
            dependencies: [
                "FieldcapSystem",
                "SyncField", "FieldcapCore", "FieldcapV4L2", "FieldcapIIO", "FieldcapBench", "FieldcapSession",
                "FieldcapSegments", "FieldcapArchive", "FieldcapRig", "FieldcapService", "FieldcapPreview",
                "FieldcapSyncService",
                "FieldcapCaptureServer", "FieldcapExport", "FieldcapEncode", "FieldcapClockQuality", "FieldcapFleet",
                "FieldcapSyncCheck", "FieldcapOutput", "FieldcapFaces", "FieldcapFeeds",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // The udev rules ship inside the binary (`fieldcap install-udev`): a rig may have
            // nothing but the binary. The file is a link to udev/70-fieldcap.rules, the one source.
            resources: [.embedInCode("Resources/udev.rules")]
        ),
        .executableTarget(
            name: "SyncFieldBench",
            dependencies: [
                "SyncField",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            path: "Benchmarks/SyncFieldBench"
        ),
        .executableTarget(name: "SyncFieldDemo", dependencies: ["SyncField"], path: "Examples/SyncFieldDemo"),
        .executableTarget(name: "RingBench", dependencies: ["FieldcapCore"], path: "Benchmarks/RingBench"),
        .executableTarget(name: "FeedBench", dependencies: ["SyncField"], path: "Benchmarks/FeedBench"),
        // The recorder's encoders and the preview's JPEG encoder on raw frames, beside FFmpeg and
        // GStreamer (Benchmarks/encode-vs-peers, Benchmarks/preview-load).
        .executableTarget(
            name: "EncodeBench", dependencies: ["FieldcapEncode", "FieldcapCore"], path: "Benchmarks/EncodeBench"),
        .executableTarget(
            name: "ClockBench", dependencies: ["FieldcapCore", "FieldcapBench", "SyncField"],
            path: "Benchmarks/ClockBench"),
        // What several test targets share (a seeded random source).
        .target(name: "TestSupport", dependencies: ["FieldcapCore"], path: "Tests/TestSupport"),
        .testTarget(
            name: "SyncFieldTests", dependencies: ["FieldcapSystem", "FieldcapOutput", "SyncField", "TestSupport"]),
        .testTarget(name: "FieldcapOutputTests", dependencies: ["FieldcapOutput", "TestSupport"]),
        .testTarget(
            name: "FieldcapNetworkingTests",
            dependencies: ["FieldcapNetworking", "TestSupport", .product(name: "NIOCore", package: "swift-nio")]),
        .testTarget(name: "FieldcapCoreTests", dependencies: ["FieldcapCore", "SyncField", "TestSupport"]),
        .testTarget(
            name: "FieldcapFeedsTests",
            dependencies: ["FieldcapFeeds", "FieldcapCore", "FieldcapSystem", "SyncField", "TestSupport"]),
        .testTarget(name: "FieldcapBenchTests", dependencies: ["FieldcapBench", "FieldcapCore", "TestSupport"]),
        .testTarget(name: "FieldcapHotplugTests", dependencies: ["FieldcapHotplug", "FieldcapSystem"]),
        .testTarget(name: "FieldcapIIOTests", dependencies: ["FieldcapIIO", "FieldcapCore", "TestSupport"]),
        // The V4L2 ABI as Swift imports it, and what each errno means, without a device.
        .testTarget(
            name: "FieldcapV4L2Tests",
            dependencies: ["FieldcapV4L2", "CV4L2", "FieldcapSystem", "FieldcapCore", "SyncField", "TestSupport"]),
        .testTarget(name: "FieldcapSegmentsTests", dependencies: ["FieldcapSegments", "FieldcapCore", "SyncField"]),
        .testTarget(
            name: "FieldcapMediaTests", dependencies: ["FieldcapMedia", "FieldcapCore", "SyncField", "TestSupport"]),
        .testTarget(
            name: "FieldcapSessionTests",
            dependencies: [
                "FieldcapSession", "FieldcapGPIO", "FieldcapMedia", "FieldcapEncode", "FieldcapCore", "SyncField",
                "TestSupport",
                // A segment a camera was away for, read by request, export and extract.
                "FieldcapSyncService", "FieldcapExport", "FieldcapArchive",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "FieldcapArchiveTests",
            dependencies: [
                "FieldcapArchive", "FieldcapSession", "FieldcapSegments", "FieldcapMedia", "FieldcapCore", "SyncField",
                "TestSupport",
            ]),
        .testTarget(name: "FieldcapExportTests", dependencies: ["FieldcapExport"]),
        .testTarget(
            name: "FieldcapSyncCheckTests", dependencies: ["FieldcapSyncCheck", "FieldcapCore", "TestSupport"]),
        .testTarget(name: "FieldcapCalibrationTests", dependencies: ["FieldcapCalibration", "FieldcapCore"]),
        .testTarget(name: "FieldcapYAMLTests", dependencies: ["FieldcapYAML"]),
        .testTarget(name: "FieldcapFleetTests", dependencies: ["FieldcapFleet", "TestSupport"]),
        .testTarget(
            name: "FieldcapClockQualityTests",
            dependencies: ["FieldcapClockQuality", "FieldcapCore", "SyncField", "TestSupport"],
            // What chronyc and pmc printed, read by the tests; the live ptp4l pair's script.
            exclude: ["Recorded", "Live"]),
        .testTarget(
            name: "FieldcapRigTests",
            dependencies: ["FieldcapRig", "FieldcapSession", "FieldcapSegments", "FieldcapCore"]),
        .testTarget(
            name: "FieldcapCaptureServerTests", dependencies: ["FieldcapCaptureServer", "FieldcapSession"]),
        .testTarget(
            name: "FieldcapSyncServiceTests",
            dependencies: ["FieldcapSyncService", "FieldcapSession", "SyncField", "TestSupport"]),
        .testTarget(
            name: "FieldcapFacesTests",
            dependencies: ["FieldcapFaces", "FieldcapEncode", "FieldcapCore", "CPNG", "TestSupport"]),
        .testTarget(name: "FieldcapEncodeTests", dependencies: ["FieldcapEncode", "FieldcapCore", "TestSupport"]),
        .testTarget(
            name: "FieldcapPreviewTests",
            dependencies: ["FieldcapSystem", "FieldcapPreview", "FieldcapCore", "SyncField", "TestSupport"]),
        .testTarget(
            name: "FieldcapCLITests",
            dependencies: [
                "fieldcap", "FieldcapCore", "FieldcapSegments", "FieldcapSystem", "SyncField", "TestSupport",
            ],
            // The independent clients and harnesses the tests run (Python, shell).
            exclude: ["Clients", "Netns"]
        ),
        // The SDK README's examples, compiled as an SDK user compiles them (Swift 5 language mode).
        .testTarget(
            name: "SyncFieldREADMETests",
            dependencies: ["SyncField"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "SyncFieldAllocationTests",
            dependencies: [
                "SyncField",
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
            ]
        ),
    ],
    cxxLanguageStandard: .cxx17
)

/// Where each module lives. `Sources/` is grouped by the data path, in order: the platform under
/// everything, the SDK's writer, capture (device to records), storage (records to files), the rig
/// (one recording's lifecycle), what reads recordings afterwards, and the front ends that drive
/// them all. A module uses modules of its own folder and of the folders before it. Module names
/// stay the products' and imports' names; only their folders are grouped.
let layers: [(folder: String, targets: [String])] = [
    // C shims over the system's libraries, and what every layer parses, sends and announces with
    (
        "1-Platform",
        [
            "CFieldcapLinux", "CV4L2", "CIIO", "CMatroska", "CAVCodec", "CArchive", "CAvahi", "CLZ4",
            "CMosquitto", "CPNG", "CTurboJPEG", "CYAML", "CZlib", "CZstd", "CLibcrypto", "FieldcapYAML",
            "FieldcapNetworking", "FieldcapDiscovery", "FieldcapSystem", "FieldcapOutput", "CUdev", "FieldcapHotplug",
        ]
    ),
    // SyncField: the SDK's API, its writer and its validator
    ("2-SDK", ["SyncField"]),
    // devices to records: the ring, the recorder, V4L2 cameras, IIO IMUs, programs' feeds, GPIO
    // lines' edges, the clocks
    (
        "3-Capture",
        ["FieldcapCore", "FieldcapV4L2", "FieldcapIIO", "FieldcapFeeds", "FieldcapGPIO", "FieldcapClockQuality"]
    ),
    // records to files: segments, Matroska videos, encoders, faces covered before frames are encoded
    ("4-Storage", ["FieldcapSegments", "FieldcapMedia", "FieldcapEncode", "FieldcapFaces"]),
    // the application layer every front end drives: plans, the recording, recovery, previews, the rig
    ("5-Rig", ["FieldcapSession", "FieldcapPreview", "FieldcapCalibration", "FieldcapRig"]),
    // what reads recordings afterwards: browsing, extracting, exports, the alignment service, bench,
    // the camera–IMU offset check
    ("6-Offline", ["FieldcapArchive", "FieldcapExport", "FieldcapSyncService", "FieldcapBench", "FieldcapSyncCheck"]),
    // the HTTP service, the capture-server client, the fleet, each a face of the rig that uses no
    // other; and the CLI, the program that puts them together
    ("7-Frontends", ["fieldcap", "FieldcapService", "FieldcapCaptureServer", "FieldcapFleet"]),
]
for target in package.targets where target.type != .test && target.path == nil {
    guard let layer = layers.first(where: { $0.targets.contains(target.name) }) else {
        fatalError("Package.swift: the target \(target.name) belongs to no layer: add it to `layers`")
    }
    target.path = "Sources/\(layer.folder)/\(target.name)"
}
