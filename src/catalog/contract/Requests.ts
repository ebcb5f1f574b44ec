import type { AspectRatio, ReferenceMode } from "./Capabilities.ts"
import type { ImageFormat, ImageOperation } from "./ImageCapabilities.ts"

/**
 * Requests as validation leaves them (catalog/VideoRequest.ts,
 * ImageRequest.ts) and as an adapter's job carries them: the plugin
 * contract's side of what a task asks for, so adapters read it without
 * depending on how it was validated.
 */

export interface Reference {
  readonly url: string
  readonly name?: string
}

export interface ValidVideoRequest {
  readonly model: string
  readonly operation: "generation"
  readonly prompt: string
  readonly mode: ReferenceMode | null
  readonly image: Reference | null
  readonly referenceImages: ReadonlyArray<Reference>
  readonly referenceVideos: ReadonlyArray<Reference>
  readonly referenceAudios: ReadonlyArray<Reference>
  readonly duration: number
  readonly aspectRatio: AspectRatio
  readonly generateAudio: boolean
  readonly clientReferenceId: string | null
  readonly metadata: Record<string, unknown> | null
  readonly providerOptions: Record<string, Record<string, unknown>>
}

/** Where an input image comes from: a caller's URL, or a file sent in a multipart request and stored by the service. */
export type ImageSource =
  | { readonly url: string }
  | { readonly storageKey: string; readonly mimeType: string }

export interface ValidImageRequest {
  readonly model: string
  readonly operation: ImageOperation
  readonly prompt: string
  readonly images: ReadonlyArray<ImageSource>
  readonly mask: ImageSource | null
  readonly count: number
  readonly size: string
  readonly quality: string
  readonly format: ImageFormat
  readonly clientReferenceId: string | null
  readonly metadata: Record<string, unknown> | null
  readonly providerOptions: Record<string, Record<string, unknown>>
}
