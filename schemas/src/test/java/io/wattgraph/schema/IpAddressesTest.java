package io.wattgraph.schema;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class IpAddressesTest {

  @ParameterizedTest
  @CsvSource({
    "10.0.0.1, 10.0.0.1",
    "::ffff:10.0.0.1, 10.0.0.1",
    "::1, ::1",
    "::, ::",
    "2001:db8:0:0:0:0:0:2, 2001:db8::2",
    "2001:db8:0:0:1:0:0:1, 2001:db8::1:0:0:1",
    "fe80:0:0:1:0:0:0:1, fe80:0:0:1::1",
    "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff, ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"
  })
  void roundTripsToCanonicalText(String in, String expected) {
    assertEquals(expected, IpAddresses.format(IpAddresses.parse(in)));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "localhost", "example.com", "1.2.3", "10.0.0.1; DROP"})
  void rejectsWhatIsNotALiteral(String in) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> IpAddresses.parse(in));
    assertTrue(e.getMessage().contains("not an IP address literal"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"127.0.0.1", "::ffff:1.2.3.4"})
  void ipv4IsMapped(String in) {
    assertTrue(IpAddresses.isIpv4(IpAddresses.parse(in)));
    assertFalse(IpAddresses.isIpv4(IpAddresses.parse("::1")));
  }
}
