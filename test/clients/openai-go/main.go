// A video pipeline as an openai-go user writes it, pointed at the gateway: create (multipart, optionally with a
// first frame), poll until it ends, download the bytes. It prints one JSON line that the jest test reads
// (test/integration/video-openai-go.test.ts). Configured by the environment: GATEWAY_URL (…/v1), API_KEY, MODEL,
// and FRAME (a file path, optional).
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

type result struct {
	ID       string `json:"id"`
	Created  string `json:"created_status"`
	Status   string `json:"status"`
	Polls    int    `json:"polls"`
	Bytes    int    `json:"bytes"`
	SHA256   string `json:"sha256"`
	Type     string `json:"content_type"`
	ErrorMsg string `json:"error,omitempty"`
}

func main() {
	out := result{}
	if err := run(&out); err != nil {
		out.ErrorMsg = err.Error()
	}
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
	if out.ErrorMsg != "" {
		os.Exit(1)
	}
}

func run(out *result) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := openai.NewClient(option.WithBaseURL(os.Getenv("GATEWAY_URL")), option.WithAPIKey(os.Getenv("API_KEY")), option.WithMaxRetries(0))

	params := openai.VideoNewParams{
		Model:   openai.VideoModel(os.Getenv("MODEL")),
		Prompt:  "a paper boat on a rainy street",
		Seconds: openai.VideoSeconds8,
		Size:    openai.VideoSize720x1280,
	}
	if frame := os.Getenv("FRAME"); frame != "" {
		f, err := os.Open(frame)
		if err != nil {
			return err
		}
		defer f.Close()
		params.InputReference = openai.VideoNewParamsInputReferenceUnion{OfFile: f}
	}
	video, err := client.Videos.New(ctx, params)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	out.ID = video.ID
	out.Created = string(video.Status)

	for video.Status != openai.VideoStatusCompleted && video.Status != openai.VideoStatusFailed {
		time.Sleep(100 * time.Millisecond)
		out.Polls++
		if video, err = client.Videos.Get(ctx, out.ID); err != nil {
			return fmt.Errorf("poll: %w", err)
		}
	}
	out.Status = string(video.Status)
	if video.Status != openai.VideoStatusCompleted {
		return fmt.Errorf("the video ended %s", video.Status)
	}

	res, err := client.Videos.DownloadContent(ctx, out.ID, openai.VideoDownloadContentParams{})
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	sum := sha256.Sum256(body)
	out.Bytes = len(body)
	out.SHA256 = hex.EncodeToString(sum[:])
	out.Type = res.Header.Get("Content-Type")
	return nil
}
