extension SyncRequest {
    /// The file-upload mode's form (`POST /api/v1/sync/upload`), as the SDK README's curl
    /// example sends it: a `files` part and a `timestamp_files` part per stream, then the
    /// comma-separated `stream_ids` and `host_ids` (one entry per file, in the files' order)
    /// and `primary_id`.
    ///
    /// A video stream sends its video; a sensor stream, which the README's example does not
    /// show, sends its `{id}.jsonl`, the data the volume-mounted mode finds beside its
    /// timestamps.
    public func uploadForm(boundary: String? = nil) throws -> MultipartForm {
        var form = boundary.map { MultipartForm(boundary: $0) } ?? MultipartForm()
        var streamIds: [String] = []
        var hostIds: [String] = []
        let streams = sessions.flatMap { session in session.streams.map { (session.hostId, $0) } }
        for (host, stream) in streams {
            guard let file = stream.dataFile else { continue }
            for id in [host, stream.id] where id.contains(",") { throw SyncRequestError.commaInId(id) }
            try form.addFile(
                "files", path: file, filename: Self.fileName(file), contentType: MultipartForm.contentType(of: file))
            streamIds.append(stream.id)
            hostIds.append(host)
        }
        for (_, stream) in streams where stream.dataFile != nil {
            try form.addFile(
                "timestamp_files", path: stream.timestampsFile, filename: Self.fileName(stream.timestampsFile),
                contentType: MultipartForm.contentType(of: stream.timestampsFile))
        }
        form.addField("stream_ids", streamIds.joined(separator: ","))
        form.addField("host_ids", hostIds.joined(separator: ","))
        form.addField("primary_id", primary.stream)
        form.finish()
        return form
    }

    static func fileName(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}
