/**
 * Trusted proxies: which peers may name the client's address and scheme.
 * Addresses in every form sockets and proxies write them, CIDR ranges in both
 * families, the right-most untrusted X-Forwarded-For hop, and entries that are
 * not addresses refused with the entry named.
 */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as fc from "fast-check"
import * as TrustedProxies from "../src/TrustedProxies.ts"

const trust = (entries: ReadonlyArray<string>) => TrustedProxies.unsafeMake(entries)

describe("TrustedProxies", () => {
  it("matches addresses and CIDR ranges in both families", () => {
    const trusted = trust(["10.0.0.0/8", "192.168.1.10", "fd00::/8", "2001:db8::1"])
    for (
      const address of [
        "10.0.0.1",
        "10.255.255.255",
        "192.168.1.10",
        "fd12:3456::7",
        "2001:db8::1",
        "2001:0db8:0:0:0:0:0:1"
      ]
    ) {
      assert.isTrue(trusted.contains(address), address)
    }
    for (const address of ["11.0.0.1", "192.168.1.11", "fe80::1", "2001:db8::2", "unknown", ""]) {
      assert.isFalse(trusted.contains(address), address)
    }
  })

  it("reads IPv4-mapped IPv6, ports, brackets and zones as the plain address", () => {
    const trusted = trust(TrustedProxies.loopback)
    for (
      const address of [
        "127.0.0.1",
        "::ffff:127.0.0.1",
        "127.9.9.9:443",
        "::1",
        "[::1]:8080",
        "0:0:0:0:0:0:0:1",
        "::1%lo"
      ]
    ) {
      assert.isTrue(trusted.contains(address), address)
    }
    assert.isFalse(trusted.contains("::ffff:10.0.0.1"))
    assert.isTrue(trust(["::ffff:10.0.0.0/104"]).contains("10.1.2.3"), "a mapped range counts over the IPv4 part")
  })

  it("refuses entries that are not addresses or ranges, naming them", () => {
    for (
      const bad of [
        "10.0.0.0/33",
        "::1/129",
        "300.1.1.1",
        "proxy.internal",
        "10.0.0.0/8/1",
        "1:2:3:4:5:6:7:8:9",
        "fd00::/x"
      ]
    ) {
      const result = TrustedProxies.make(["127.0.0.1", bad])
      assert.isTrue(Result.isFailure(result), bad)
      if (Result.isFailure(result)) assert.include(result.failure, `'${bad}'`)
    }
    assert.isTrue(Result.isSuccess(TrustedProxies.make([])))
  })

  it("contains every address of a range it was given", () => {
    fc.assert(
      fc.property(
        fc.ipV4(),
        fc.integer({ min: 0, max: 32 }),
        (address, prefix) => trust([`${address}/${prefix}`]).contains(address)
      )
    )
    fc.assert(
      fc.property(
        fc.ipV6(),
        fc.integer({ min: 0, max: 128 }),
        (address, prefix) => trust([`${address}/${prefix}`]).contains(address)
      )
    )
  })

  it("takes the client's address from a trusted peer's X-Forwarded-For: the right-most untrusted hop", () => {
    const trusted = trust(["127.0.0.1", "10.0.0.0/8"])
    assert.strictEqual(TrustedProxies.clientAddress(trusted, "127.0.0.1", "203.0.113.9"), "203.0.113.9")
    // The client wrote "1.1.1.1" itself; the first proxy appended the address it saw.
    assert.strictEqual(
      TrustedProxies.clientAddress(trusted, "127.0.0.1", "1.1.1.1, 203.0.113.9, 10.0.0.2"),
      "203.0.113.9"
    )
    assert.strictEqual(TrustedProxies.clientAddress(trusted, "127.0.0.1", "10.0.0.3, 10.0.0.2"), "10.0.0.3")
    assert.strictEqual(TrustedProxies.clientAddress(trusted, "127.0.0.1", undefined), "127.0.0.1")
    assert.strictEqual(TrustedProxies.clientAddress(trusted, "127.0.0.1", " , "), "127.0.0.1")
  })

  it("ignores X-Forwarded-For and X-Forwarded-Proto from a peer it does not trust", () => {
    const trusted = trust(TrustedProxies.loopback)
    assert.strictEqual(TrustedProxies.clientAddress(trusted, "198.51.100.4", "203.0.113.9"), "198.51.100.4")
    assert.isUndefined(TrustedProxies.forwardedHttps(trusted, "198.51.100.4", "https"))
    assert.isTrue(TrustedProxies.forwardedHttps(trusted, "127.0.0.1", "HTTPS, http"))
    assert.isFalse(TrustedProxies.forwardedHttps(trusted, "127.0.0.1", "http"))
    assert.isUndefined(TrustedProxies.forwardedHttps(trusted, "127.0.0.1", undefined))
  })
})
