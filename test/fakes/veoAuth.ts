import { createVerify, generateKeyPairSync, type KeyObject, randomBytes } from "node:crypto"

/**
 * The fake's OAuth token endpoint (RFC 7523, what Google's
 * `oauth2.googleapis.com/token` does for service accounts): the assertion
 * must be an RS256 JWT signed by the test key's private half, issued by the
 * account's email, for this endpoint (`aud`), with the cloud-platform scope
 * and an unexpired `exp`. A valid one earns a bearer token the Vertex routes accept.
 */

export interface TestServiceAccount {
  /** The key file's JSON, as an operator would put it in the variable. */
  readonly json: string
  readonly email: string
  readonly publicKey: KeyObject
}

/** A service-account key file like Google's, pointing `token_uri` at the fake. */
export const makeServiceAccount = (tokenUri: string, email = "veo-gateway@test-project.iam.gserviceaccount.com") => {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
  const json = JSON.stringify({
    type: "service_account",
    project_id: "test-project",
    private_key_id: randomBytes(20).toString("hex"),
    private_key: privateKey.export({ type: "pkcs8", format: "pem" }),
    client_email: email,
    client_id: "100000000000000000001",
    auth_uri: "https://accounts.google.com/o/oauth2/auth",
    token_uri: tokenUri
  })
  return { json, email, publicKey } satisfies TestServiceAccount
}

const part = (s: string) => JSON.parse(Buffer.from(s, "base64url").toString("utf8"))

/** Why an assertion is refused, or undefined when it is good. */
export const assertionProblem = (
  jwt: string,
  account: { email: string; publicKey: KeyObject },
  audience: string
): string | undefined => {
  const [h, p, s] = jwt.split(".")
  if (h === undefined || p === undefined || s === undefined) return "not a JWT"
  let header: any
  let claims: any
  try {
    header = part(h)
    claims = part(p)
  } catch {
    return "not a JWT"
  }
  if (header.alg !== "RS256") return "alg must be RS256"
  const verify = createVerify("RSA-SHA256")
  verify.update(`${h}.${p}`)
  if (!verify.verify(account.publicKey, Buffer.from(s, "base64url"))) return "invalid_grant: Invalid JWT Signature."
  const now = Math.floor(Date.now() / 1000)
  if (claims.iss !== account.email) return "invalid_grant: unknown issuer"
  if (claims.aud !== audience) return "invalid_grant: wrong audience"
  if (claims.scope !== "https://www.googleapis.com/auth/cloud-platform") return "invalid_scope"
  if (typeof claims.iat !== "number" || typeof claims.exp !== "number") return "invalid_grant: iat and exp required"
  if (claims.exp <= now || claims.iat > now + 60 || claims.exp - claims.iat > 3600) return "invalid_grant: bad times"
  return undefined
}
