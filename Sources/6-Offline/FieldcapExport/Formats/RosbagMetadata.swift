/// A rosbag2 directory's `metadata.yaml` for one MCAP file, in the version-5 layout ROS 2 Humble
/// writes (newer `ros2 bag` and `rosbags` read it too; older `rosbags` need it to open a bag).
enum RosbagMetadata {
    static func yaml(summary: MCAPExport.Summary, file: String) -> String {
        let start = summary.firstNs ?? 0
        let duration = summary.messageCount > 0 ? summary.lastNs - start : 0
        var text = """
            rosbag2_bagfile_information:
              version: 5
              storage_identifier: mcap
              duration:
                nanoseconds: \(duration)
              starting_time:
                nanoseconds_since_epoch: \(start)
              message_count: \(summary.messageCount)
              topics_with_message_count:

            """
        for topic in summary.topics {
            text += """
                    - topic_metadata:
                        name: \(topic.topic)
                        type: \(topic.type)
                        serialization_format: cdr
                        offered_qos_profiles: "\(MCAPExport.offeredQoS.split(separator: "\n").joined(separator: "\\n"))"
                      message_count: \(topic.count)

                """
        }
        text += """
              compression_format: ""
              compression_mode: ""
              relative_file_paths:
                - \(file)
              files:
                - path: \(file)
                  starting_time:
                    nanoseconds_since_epoch: \(start)
                  duration:
                    nanoseconds: \(duration)
                  message_count: \(summary.messageCount)

            """
        return text
    }
}
