/// Where the broker is, as users write it: `mqtt://HOST[:PORT]` (1883) or `mqtts://HOST[:PORT]`
/// (TLS, 8883), with `USER[:PASSWORD]@` before the host when the broker asks for a login.
public struct BrokerAddress: Equatable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int32
    public var tls: Bool
    public var username: String?
    public var password: String?

    public init(host: String, port: Int32 = 1883, tls: Bool = false, username: String? = nil, password: String? = nil) {
        self.host = host
        self.port = port
        self.tls = tls
        self.username = username
        self.password = password
    }

    /// Parses `mqtt://...` or `mqtts://...`, or says what is wrong in a user's words.
    public static func parse(_ text: String) -> Result<BrokerAddress, BrokerAddressError> {
        let tls: Bool
        var rest: Substring
        if text.hasPrefix("mqtt://") {
            (tls, rest) = (false, text.dropFirst("mqtt://".count))
        } else if text.hasPrefix("mqtts://") {
            (tls, rest) = (true, text.dropFirst("mqtts://".count))
        } else {
            return .failure(
                BrokerAddressError(
                    "'\(text)' is not an MQTT broker's address: write mqtt://HOST[:PORT] or mqtts://HOST[:PORT]"))
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        var username: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let login = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = login.firstIndex(of: ":") {
                username = String(login[..<colon])
                password = String(login[login.index(after: colon)...])
            } else {
                username = String(login)
            }
            if username?.isEmpty == true {
                return .failure(BrokerAddressError("'\(text)': the user name before '@' is empty"))
            }
        }
        var host = String(rest)
        var port: Int32 = tls ? 8883 : 1883
        if host.hasPrefix("[") {
            // [::1]:1883
            guard let close = host.firstIndex(of: "]") else {
                return .failure(BrokerAddressError("'\(text)': an IPv6 address needs its closing ']'"))
            }
            let after = host[host.index(after: close)...]
            if after.hasPrefix(":") {
                guard let value = Int32(after.dropFirst()), (1...65535).contains(value) else {
                    return .failure(BrokerAddressError("'\(text)': the port must be 1 to 65535"))
                }
                port = value
            } else if !after.isEmpty {
                return .failure(BrokerAddressError("'\(text)': unexpected '\(after)' after the address"))
            }
            host = String(host[host.index(after: host.startIndex)..<close])
        } else if let colon = host.lastIndex(of: ":") {
            guard let value = Int32(host[host.index(after: colon)...]), (1...65535).contains(value) else {
                return .failure(BrokerAddressError("'\(text)': the port must be 1 to 65535"))
            }
            port = value
            host = String(host[..<colon])
        }
        guard !host.isEmpty, !host.contains("/") else {
            return .failure(BrokerAddressError("'\(text)' names no broker host: write mqtt://HOST[:PORT]"))
        }
        return .success(BrokerAddress(host: host, port: port, tls: tls, username: username, password: password))
    }

    /// The address without the password.
    public var description: String {
        let login = username.map { "\($0)@" } ?? ""
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(tls ? "mqtts" : "mqtt")://\(login)\(shownHost):\(port)"
    }
}

public struct BrokerAddressError: Error, CustomStringConvertible, Equatable {
    public var description: String
    init(_ description: String) { self.description = description }
}
