resource "aws_ebs_volume" "data" {
  availability_zone = "us-east-1a"
  size              = 10
}
