package io.wattgraph.schema;

import java.net.InetAddress;
import java.net.UnknownHostException;

/** Conversions between textual IP addresses and the schema's 16-byte {@link IpAddress}. */
public final class IpAddresses {

  private static final java.util.regex.Pattern IPV4 = java.util.regex.Pattern.compile(
      "((25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)\\.){3}(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)");

  private IpAddresses() {}

  /** Parses a literal IPv4 or IPv6 address (never a host name); IPv4 becomes ::ffff:a.b.c.d. */
  public static IpAddress parse(String literal) {
    // InetAddress alone would accept legacy forms such as "1.2.3" (= 1.2.0.3) and look up names.
    if (literal == null || !(IPV4.matcher(literal).matches()
        || (literal.contains(":") && literal.matches("[0-9A-Fa-f:.]+")))) {
      throw new IllegalArgumentException("not an IP address literal: '" + literal + "'");
    }
    byte[] raw;
    try {
      raw = InetAddress.getByName(literal).getAddress();
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException("not an IP address literal: '" + literal + "'", e);
    }
    byte[] out = new byte[16];
    if (raw.length == 4) {
      out[10] = (byte) 0xff;
      out[11] = (byte) 0xff;
      System.arraycopy(raw, 0, out, 12, 4);
    } else {
      System.arraycopy(raw, 0, out, 0, 16);
    }
    return new IpAddress(out);
  }

  /** True when the address is IPv4 carried in the IPv4-mapped form. */
  public static boolean isIpv4(IpAddress a) {
    byte[] b = a.bytes();
    for (int i = 0; i < 10; i++) {
      if (b[i] != 0) {
        return false;
      }
    }
    return b[10] == (byte) 0xff && b[11] == (byte) 0xff;
  }

  /** Dotted quad for IPv4, RFC 5952 compressed form for IPv6. */
  public static String format(IpAddress a) {
    byte[] b = a.bytes();
    if (isIpv4(a)) {
      return (b[12] & 0xff) + "." + (b[13] & 0xff) + "." + (b[14] & 0xff) + "." + (b[15] & 0xff);
    }
    int[] groups = new int[8];
    for (int i = 0; i < 8; i++) {
      groups[i] = ((b[2 * i] & 0xff) << 8) | (b[2 * i + 1] & 0xff);
    }
    // Longest run (>= 2) of zero groups becomes "::" (first one on ties).
    int bestStart = -1;
    int bestLen = 1;
    for (int i = 0; i < 8; ) {
      if (groups[i] != 0) {
        i++;
        continue;
      }
      int j = i;
      while (j < 8 && groups[j] == 0) {
        j++;
      }
      if (j - i > bestLen) {
        bestStart = i;
        bestLen = j - i;
      }
      i = j;
    }
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < 8; i++) {
      if (i == bestStart) {
        sb.append("::");
        i += bestLen - 1;
        continue;
      }
      if (sb.length() > 0 && sb.charAt(sb.length() - 1) != ':') {
        sb.append(':');
      }
      sb.append(Integer.toHexString(groups[i]));
    }
    return sb.toString();
  }
}
